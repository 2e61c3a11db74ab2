import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { silentLogger } from '../../src/shared/logger';
import { buildService, type Service } from '../../src/service/build-service';
import { TokenService } from '../../src/tokens/token-service';
import { PRICED_STATUS } from '../support/mcp-test-app';

// buildService passes one clock to everything that reads time: a test says "now is T" once.
const WINDOW_START_MS = 29_000_000 * 60_000;

let dir: string;
let service: Service;
const clock = { nowMs: WINDOW_START_MS + 10_000 };

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-clock-'));
  clock.nowMs = WINDOW_START_MS + 10_000;
  service = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), TOKEN_CACHE_TTL_MS: '30000' , ...PRICED_STATUS }), { logger: silentLogger, clock: () => clock.nowMs });
});
afterEach(async () => {
  await service.release();
  await rm(dir, { recursive: true, force: true });
});

const call = (secret: string) =>
  request(service.app)
    .post('/mcp')
    .set('Authorization', `Bearer ${secret}`)
    .set('Accept', 'application/json, text/event-stream')
    .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });

test('the headers and the tools count from the injected clock', async () => {
  const { secret } = await new TokenService({ store: service.tokenStore, tiers: ['default'] }).create({ name: 'clocked' });
  const res = await call(secret);
  expect(res.status).toBe(200);
  expect(res.headers['ratelimit']).toBe('"default";r=119;t=50');
  expect(res.headers['x-ratelimit-reset']).toBe(String((WINDOW_START_MS + 60_000) / 1000));
  expect(res.body.result.structuredContent).toMatchObject({ remaining: 119, resetInSeconds: 50 });
});

test('the token cache expires by the injected clock: a revocation is seen once it has moved past the TTL', async () => {
  const tokens = new TokenService({ store: service.tokenStore, tiers: ['default'] });
  const { secret, token } = await tokens.create({ name: 'soon revoked' });
  expect((await call(secret)).status).toBe(200);
  await tokens.revoke(token.id);
  clock.nowMs += 29_000;
  expect((await call(secret)).status).toBe(200); // still within the TTL: cached
  clock.nowMs += 1_000;
  expect((await call(secret)).status).toBe(401);
});
