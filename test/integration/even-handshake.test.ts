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

let dir: string;
let service: Service;
let secret: string;
let tokenId: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-handshake-'));
  service = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), RATE_LIMIT_PER_MINUTE: '2' }), { logger: silentLogger, clock: () => FROZEN_MS });
  const created = await new TokenService({ store: service.tokenStore, tiers: ['default'] }).create({ name: 'handshake' });
  ({ secret } = created);
  tokenId = created.token.id;
});
afterEach(async () => {
  await service.release();
  await rm(dir, { recursive: true, force: true });
});

function post(body: unknown, headers: Record<string, string> = {}) {
  return request(service.app).post('/mcp').set('Authorization', `Bearer ${secret}`).set('Accept', ACCEPT).set('Content-Type', 'application/json').set(headers).send(JSON.stringify(body));
}
const modern = (id: number, method: string, params: Record<string, unknown> = {}) =>
  post({ jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope } }, { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method });
const paidRemaining = async () => (await service.limiter.consume(tokenId, { cost: 0 })).remaining;

test('server/discover, the 2026-07-28 handshake, costs what initialize costs: nothing of the paid limit', async () => {
  for (let id = 1; id <= 5; id++) {
    const res = await modern(id, 'server/discover');
    expect(res.status).toBe(200);
    expect(res.body.result).toBeDefined();
  }
  expect(await paidRemaining()).toBe(2);
});

test('logging/setLevel costs nothing in either era', async () => {
  await modern(1, 'logging/setLevel', { level: 'info' });
  await post({ jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'info' } });
  expect(await paidRemaining()).toBe(2);
});

test('a method the service does not serve answers -32601 and costs nothing; a served call still costs one', async () => {
  for (const method of ['prompts/get', 'foo/bar', 'completion/complete']) {
    const res = await post({ jsonrpc: '2.0', id: 3, method, params: {} });
    expect(res.body.error?.code).toBe(-32601);
  }
  expect(await paidRemaining()).toBe(2);
  expect((await post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'whoami', arguments: {} } })).headers['x-ratelimit-remaining']).toBe('1');
});

test('once the paid budget is spent, a client can still discover the server in both eras', async () => {
  for (let id = 1; id <= 2; id++) await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
  expect(await paidRemaining()).toBe(0);
  expect((await modern(9, 'server/discover')).status).toBe(200);
  expect((await post({ jsonrpc: '2.0', id: 10, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } })).status).toBe(200);
});
