import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { createCapturingLogger } from '../support/capturing-logger';
import { PRICED_STATUS } from '../support/mcp-test-app';
import { events, seriesValue } from '../support/outage-scenarios';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/**
 * Issue 19 item 6 (one part): the service's limits on one backend (the token
 * limit and the sign-in budget here; the upstream quota too) share one outage
 * guard. Before, each limiter had its own: one frozen Redis logged an outage
 * per limiter, and a request waited the deadline once per limiter (1.02 s at
 * a 500 ms deadline).
 */

jest.setTimeout(60_000);

const DEADLINE_MS = 500;
/** Scheduling slack on two shared cores. */
const MARGIN_MS = 250;

let redis: RedisServer;
let dir: string;
let secret: string;
let service: Service | undefined;
const logger = createCapturingLogger();

beforeAll(async () => {
  redis = await startRedisServer();
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-one-guard-'));
  const store = new FileTokenStore({ path: path.join(dir, 'tokens.json') });
  ({ secret } = await new TokenService({ store }).create({ name: 'one-guard-test' }));
  await store.close();
});

afterAll(async () => {
  redis?.resume();
  await service?.release();
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

async function call(id: number): Promise<{ status: number; shared: boolean | undefined; elapsedMs: number }> {
  const startedAt = performance.now();
  const res = await request((service as Service).app)
    .post('/mcp')
    .set('Host', 'localhost')
    .set('Authorization', `Bearer ${secret}`)
    .set('Accept', 'application/json, text/event-stream')
    .set('Content-Type', 'application/json')
    .send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });
  const body = res.body as { result?: { structuredContent?: { shared?: boolean } } };
  return { status: res.status, shared: body.result?.structuredContent?.shared, elapsedMs: performance.now() - startedAt };
}

test('a frozen Redis is one outage for every limit on it: one line each way, one metric, one deadline per request', async () => {
  const config = loadConfig({
    ...PRICED_STATUS,
    RATE_LIMIT_BACKEND: 'redis',
    REDIS_URL: redis.url,
    TOKEN_STORE: 'file',
    TOKENS_FILE: path.join(dir, 'tokens.json'),
    RATE_LIMIT_TIMEOUT_MS: String(DEADLINE_MS),
    RATE_LIMIT_PROBE_INTERVAL_MS: '1000',
  });
  service = await buildService(config, { logger });
  // Shared answers first (the token is verified and cached), so what follows is the outage alone.
  for (let i = 0; i < 3; i++) expect(await call(i)).toMatchObject({ status: 200, shared: true });
  logger.entries.length = 0;
  const outagesBefore = (await seriesValue(service.metrics, 'firelimit_backend_outages_total{backend="redis"}')) ?? 0;

  redis.suspend();
  const first = await call(10);
  const following = [];
  for (let i = 0; i < 5; i++) following.push(await call(11 + i));
  redis.resume();
  let back = false;
  for (let i = 0; i < 60 && !back; i++) {
    back = (await call(100 + i)).shared === true;
    if (!back) await sleep(100);
  }

  expect(first).toMatchObject({ status: 200, shared: false });
  // The sign-in budget met the freeze and waited the deadline; the token limit, on the same guard, did not wait again.
  expect(first.elapsedMs).toBeLessThan(DEADLINE_MS + MARGIN_MS);
  expect(following.every((c) => c.status === 200 && c.shared === false)).toBe(true);
  expect(back).toBe(true);
  expect(events(logger.entries, 'ratelimit.outage_started')).toHaveLength(1);
  expect(events(logger.entries, 'ratelimit.outage_ended')).toHaveLength(1);
  expect(await seriesValue(service.metrics, 'firelimit_backend_outages_total{backend="redis"}')).toBe(outagesBefore + 1);
});
