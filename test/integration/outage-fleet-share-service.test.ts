import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { jsonLines, startReadyServer, waitFor, type ServerProcess } from '../support/server-process';
import { PRICED_STATUS } from '../support/mcp-test-app';

/**
 * Three real service processes on one Redis (configured only by environment,
 * as on Cloud Run) count one another by their heartbeats, and when Redis
 * freezes mid-window they admit together what the token had left, not three
 * times it (RATE_LIMIT_OUTAGE_SHARE=fleet, the default; ADR 0067).
 */
const LIMIT = 30;
const SPENT_BEFORE = 6;
const INSTANCES = 3;

let dir: string;
let secret: string;
let redis: RedisServer;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-fleet-'));
  const store = new FileTokenStore({ path: path.join(dir, 'tokens.json') });
  ({ secret } = await new TokenService({ store }).create({ name: 'fleet-share-test' }));
  await store.close();
  redis = await startRedisServer();
});

afterEach(async () => {
  redis.resume();
  await Promise.all(servers.splice(0).map((server) => server.kill()));
});

afterAll(async () => {
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

function call(server: ServerProcess, id: number): Promise<request.Response> {
  return request(`http://127.0.0.1:${server.port}`)
    .post('/mcp')
    .set('Host', `localhost:${server.port}`)
    .set('Authorization', `Bearer ${secret}`)
    .set('Accept', 'application/json, text/event-stream')
    .set('Content-Type', 'application/json')
    .send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });
}

/** Keeps every call inside one minute window. */
async function awayFromWindowEdge(): Promise<void> {
  const untilEdgeMs = 60_000 - (Date.now() % 60_000);
  if (untilEdgeMs < 5_000) await new Promise((resolve) => setTimeout(resolve, untilEdgeMs + 50));
}

async function startFleet(outageShare: 'fleet' | 'instance'): Promise<void> {
  const env = {
    RATE_LIMIT_BACKEND: 'redis',
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: `fleet-${outageShare}-${Date.now()}:`,
    ...PRICED_STATUS,
    RATE_LIMIT_PER_MINUTE: String(LIMIT),
    RATE_LIMIT_TIMEOUT_MS: '200',
    RATE_LIMIT_OUTAGE_SHARE: outageShare,
    RATE_LIMIT_FLEET_INTERVAL_MS: '1000',
    TOKENS_FILE: path.join(dir, 'tokens.json'),
  };
  servers.push(...(await Promise.all(Array.from({ length: INSTANCES }, () => startReadyServer(env)))));
}

async function admittedDuringFreeze(): Promise<request.Response[]> {
  for (let i = 0; i < SPENT_BEFORE; i++) expect((await call(servers[i % INSTANCES] as ServerProcess, i)).status).toBe(200);
  redis.suspend();
  const responses: request.Response[] = [];
  for (const [n, server] of servers.entries()) for (let i = 0; i < LIMIT; i++) responses.push(await call(server, 1000 * n + i));
  return responses;
}

test('three processes count one another by heartbeat, and a frozen Redis admits what the token had left across all three', async () => {
  await startFleet('fleet');
  for (const server of servers) {
    await waitFor('the heartbeats to count three instances', 15_000, async () =>
      jsonLines(server.stdout()).some((line) => line.event === 'ratelimit.fleet_changed' && line.instances === INSTANCES),
    server);
  }
  await awayFromWindowEdge();
  const responses = await admittedDuringFreeze();
  const allowed = responses.filter((r) => r.status === 200);
  for (const r of allowed) expect(r.body.result.structuredContent).toMatchObject({ shared: false, reason: 'local_fallback' });
  expect(allowed.length).toBeLessThanOrEqual(LIMIT - SPENT_BEFORE);
  expect(allowed.length).toBeGreaterThanOrEqual(LIMIT - SPENT_BEFORE - INSTANCES);
  expect(responses.filter((r) => r.status === 429)).toHaveLength(responses.length - allowed.length);
});

test("RATE_LIMIT_OUTAGE_SHARE=instance keeps ADR 0003's bound: each process admits what it saw left", async () => {
  await startFleet('instance');
  await awayFromWindowEdge();
  const responses = await admittedDuringFreeze();
  // Each saw the shared count at a different call (4, 5, 6): 26 + 25 + 24.
  expect(responses.filter((r) => r.status === 200)).toHaveLength(3 * LIMIT - 3 * SPENT_BEFORE + 3);
});
