import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { silentLogger } from '../../src/shared/logger';
import { buildService, type Service } from '../../src/service/build-service';
import { generateToken } from '../../src/tokens/token-secret';
import { TokenService } from '../../src/tokens/token-service';

let dir: string;
let service: Service;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-auth-metrics-'));
  service = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), AUTH_FAILURES_PER_MINUTE: '3' }), { logger: silentLogger });
});
afterAll(async () => {
  await service.release();
  await rm(dir, { recursive: true, force: true });
});

const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

async function refusals(): Promise<Record<string, number>> {
  const metric = await service.metrics.registry.getSingleMetricAsString('firelimit_auth_refusals_total');
  const out: Record<string, number> = {};
  for (const match of metric.matchAll(/reason="([a-z_]+)"\} (\d+)/g)) out[match[1] as string] = Number(match[2]);
  return out;
}

test('every request turned away before a token is accepted is counted by reason, with no address or token in the series', async () => {
  const revoked = await new TokenService({ store: service.tokenStore, tiers: ['default'] }).create({ name: 'soon revoked' });
  await new TokenService({ store: service.tokenStore, tiers: ['default'] }).revoke(revoked.token.id);
  const send = (authorization?: string) => {
    const req = request(service.app).post('/mcp').set('Accept', 'application/json, text/event-stream').send(rpc);
    return authorization === undefined ? req : req.set('Authorization', authorization);
  };
  expect((await send()).status).toBe(401);
  expect((await send('Bearer nope')).status).toBe(401);
  expect((await send(`Bearer ${revoked.secret}`)).status).toBe(401);
  expect((await send(`Bearer ${revoked.secret}`)).status).toBe(401);
  expect((await send(`Bearer ${generateToken().secret}`)).status).toBe(401);
  expect((await send(`Bearer ${generateToken().secret}`)).status).toBe(429);
  expect(await refusals()).toEqual({ missing_token: 1, malformed_token: 1, invalid_token: 2, repeated_invalid_token: 1, auth_failures: 1 });
  const text = await service.metrics.registry.metrics();
  expect(text).not.toContain(revoked.secret);
  expect(text).not.toContain('127.0.0.1');
});
