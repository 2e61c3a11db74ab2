import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { silentLogger } from '../../src/shared/logger';
import { buildService, type Service } from '../../src/service/build-service';
import { TokenService } from '../../src/tokens/token-service';

// Mid-minute and still, so no run crosses a window boundary.
const FROZEN_MS = Date.UTC(2026, 11, 1, 12, 0, 30);
const ACCEPT = 'application/json, text/event-stream';
const envelope = { [PROTOCOL_VERSION_META_KEY]: '2026-07-28', [CLIENT_INFO_META_KEY]: { name: 't', version: '1' }, [CLIENT_CAPABILITIES_META_KEY]: {} };
const modernCall = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: envelope } };
const modernHeaders = { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'whoami' };
const legacyCall = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'whoami', arguments: {} } };

let dir: string;
let service: Service;
let secret: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-codes-'));
  service = await buildService(
    loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), RATE_LIMIT_PER_MINUTE: '1', AUTH_FAILURES_PER_MINUTE: '1' }),
    { logger: silentLogger, clock: () => FROZEN_MS },
  );
  ({ secret } = await new TokenService({ store: service.tokenStore, tiers: ['default'] }).create({ name: 'codes' }));
});
afterEach(async () => {
  await service.release();
  await rm(dir, { recursive: true, force: true });
});

function post(bearer: string, headers: Record<string, string>, body: unknown) {
  return request(service.app).post('/mcp').set('Authorization', `Bearer ${bearer}`).set('Accept', ACCEPT).set('Content-Type', 'application/json').set(headers).send(JSON.stringify(body));
}

test('a 2026-07-28 call over its limit is refused with code 429, outside the range that revision reserves', async () => {
  expect((await post(secret, modernHeaders, modernCall)).status).toBe(200);
  const refused = await post(secret, modernHeaders, modernCall);
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({ id: 9, error: { code: 429, data: { limit: 1 } } });
});

test('a 2025 call over its limit keeps -32029', async () => {
  expect((await post(secret, {}, legacyCall)).status).toBe(200);
  const refused = await post(secret, {}, legacyCall);
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({ id: 9, error: { code: -32029 } });
});

test.each([
  ['2026-07-28', modernHeaders, modernCall, 429],
  ['2025', {}, legacyCall, -32029],
])('a %s caller past the failed sign-in budget gets its era\'s code', async (_era, headers, body, code) => {
  // The first wrong secret spends the budget of 1; the second is refused by it.
  expect((await post('flk_wrong_one', headers, body)).status).toBe(401);
  const refused = await post('flk_wrong_two', headers, body);
  expect(refused.status).toBe(429);
  expect(refused.body.error).toMatchObject({ code, data: { reason: 'auth_failures' } });
});
