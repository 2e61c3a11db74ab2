import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';
import { startReadyServer, type ServerProcess } from '../support/server-process';
import { PRICED_STATUS } from '../support/mcp-test-app';

/**
 * The real entry point (src/server.ts, configured only by environment, as on
 * Cloud Run) twice over one shared backend: the composition root must wire the
 * per-token limiter to that backend so both processes count together.
 */
const LIMIT = 5;
const CALLS = 2 * LIMIT;

let dir: string;
let secret: string;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-backends-'));
  const store = new FileTokenStore({ path: path.join(dir, 'tokens.json') });
  ({ secret } = await new TokenService({ store }).create({ name: 'shared-backend-test' }));
  await store.close();
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill()));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Keeps all calls inside one minute window: if the next boundary is under 5 s away, start after it. */
async function awayFromWindowEdge(): Promise<void> {
  const untilEdgeMs = 60_000 - (Date.now() % 60_000);
  if (untilEdgeMs < 5_000) await new Promise((resolve) => setTimeout(resolve, untilEdgeMs + 50));
}

async function callAlternately(): Promise<request.Response[]> {
  await awayFromWindowEdge();
  const responses: request.Response[] = [];
  for (let i = 0; i < CALLS; i++) {
    const server = servers[i % servers.length] as ServerProcess;
    responses.push(
      await request(`http://127.0.0.1:${server.port}`)
        .post('/mcp')
        .set('Host', `localhost:${server.port}`)
        .set('Authorization', `Bearer ${secret}`)
        .set('Accept', 'application/json, text/event-stream')
        .set('Content-Type', 'application/json')
        .send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } }),
    );
  }
  return responses;
}

function expectSharedCount(responses: request.Response[]): void {
  const allowed = responses.filter((r) => r.status === 200);
  const refused = responses.filter((r) => r.status === 429);
  expect(allowed).toHaveLength(LIMIT);
  expect(refused).toHaveLength(CALLS - LIMIT);
  for (const r of allowed) expect(r.body.result.structuredContent).toMatchObject({ shared: true, reason: 'within_limit', limit: LIMIT });
  // Remaining counts down across both processes: one counter, not two.
  expect(allowed.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0']);
  for (const r of refused) {
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(r.body.error.data).toMatchObject({ error: 'rate_limited', limit: LIMIT });
  }
}

test('two server processes on RATE_LIMIT_BACKEND=rtdb share one per-token count', async () => {
  const rtdb: RtdbTestServer = await rtdbForTests();
  try {
    const env = {
      RATE_LIMIT_BACKEND: 'rtdb',
      FIREBASE_DATABASE_URL: rtdb.databaseUrl,
      FIREBASE_DATABASE_EMULATOR_HOST: rtdb.host,
      ...PRICED_STATUS,
      RATE_LIMIT_PER_MINUTE: String(LIMIT),
      TOKENS_FILE: path.join(dir, 'tokens.json'),
    };
    servers.push(...(await Promise.all([startReadyServer(env), startReadyServer(env)])));
    expectSharedCount(await callAlternately());
  } finally {
    await Promise.all(servers.splice(0).map((server) => server.kill()));
    await rtdb.close();
  }
});

test('two server processes on RATE_LIMIT_BACKEND=redis share one per-token count and never log the URL', async () => {
  const password = 'backend-test-s3cret';
  const redis: RedisServer = await startRedisServer({ password });
  try {
    const env = {
      RATE_LIMIT_BACKEND: 'redis',
      REDIS_URL: redis.url,
      ...PRICED_STATUS,
      RATE_LIMIT_PER_MINUTE: String(LIMIT),
      TOKENS_FILE: path.join(dir, 'tokens.json'),
    };
    servers.push(...(await Promise.all([startReadyServer(env), startReadyServer(env)])));
    expectSharedCount(await callAlternately());
    for (const server of servers) {
      expect(server.stdout() + server.stderr()).not.toContain(password);
    }
  } finally {
    await Promise.all(servers.splice(0).map((server) => server.kill()));
    await redis.close();
  }
});
