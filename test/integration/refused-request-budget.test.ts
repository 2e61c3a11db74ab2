import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { silentLogger } from '../../src/shared/logger';
import { buildService, type Service } from '../../src/service/build-service';
import { TokenService } from '../../src/tokens/token-service';

const FROZEN_MS = Date.UTC(2026, 11, 1, 12, 0, 30);

let dir: string;
let service: Service;
let tokens: TokenService;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-refused-'));
  service = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), REFUSED_REQUESTS_PER_MINUTE: '3', RATE_LIMIT_PER_MINUTE: '50' }), {
    logger: silentLogger,
    // Mid-minute and still: on the real clock a run that crossed a minute boundary found its window reset (a CI failure).
    clock: () => FROZEN_MS,
  });
  tokens = new TokenService({ store: service.tokenStore, tiers: ['default'] });
});
afterEach(async () => {
  await service.release();
  await rm(dir, { recursive: true, force: true });
});

const ACCEPT = 'application/json, text/event-stream';
const ok = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } };

function post(secret: string, body: string) {
  return request(service.app).post('/mcp').set('Authorization', `Bearer ${secret}`).set('Accept', ACCEPT).set('Content-Type', 'application/json').send(body);
}

test('a token that keeps sending refused requests is cut off before its bodies are read, without touching its published budget', async () => {
  const { secret } = await tokens.create({ name: 'sloppy' });
  expect((await post(secret, JSON.stringify(ok))).headers['x-ratelimit-remaining']).toBe('49');
  const refused = [await post(secret, '{"jsonrpc":'), await post(secret, '['.repeat(100) + ']'.repeat(100)), await post(secret, '{"jsonrpc":"2.0","id":1}')];
  expect(refused.map((r) => r.status)).toEqual([400, 400, 400]);
  const cutOff = await post(secret, JSON.stringify(ok));
  expect(cutOff.status).toBe(429);
  expect(cutOff.body).toMatchObject({ error: { code: -32029, data: { reason: 'refused_requests', limit: 3 } } });
  expect(Number(cutOff.headers['retry-after'])).toBeGreaterThan(0);
  // The published limit was never charged for the refusals.
  const other = await tokens.create({ name: 'careful' });
  expect((await post(other.secret, JSON.stringify(ok))).status).toBe(200);
  expect((await service.limiter.consume((await tokens.list()).find((t) => t.name === 'sloppy')!.id, { cost: 0 })).remaining).toBe(49);
});

test('requests the limiter decided on are not counted as refused, even a 429', async () => {
  const { secret } = await tokens.create({ name: 'busy' });
  for (let i = 0; i < 55; i++) await post(secret, JSON.stringify(ok));
  const afterLimit = await post(secret, JSON.stringify(ok));
  expect(afterLimit.status).toBe(429);
  expect(afterLimit.body.error.data.reason).not.toBe('refused_requests');
});

describe('2026-07-28 requests the protocol ladder refuses', () => {
  const envelope = { [PROTOCOL_VERSION_META_KEY]: '2026-07-28', [CLIENT_INFO_META_KEY]: { name: 't', version: '1' }, [CLIENT_CAPABILITIES_META_KEY]: {} };
  const modernCall = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: envelope } };
  const unknownRevision = { ...modernCall, params: { ...modernCall.params, _meta: { ...envelope, [PROTOCOL_VERSION_META_KEY]: '2027-01-01' } } };
  const headers = { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'whoami' };
  const without = (name: string) => Object.fromEntries(Object.entries(headers).filter(([key]) => key !== name));

  function postModern(secret: string, fields: Record<string, string>, body: unknown) {
    return post(secret, JSON.stringify(body)).set(fields);
  }

  test('are answered 400 with the SDK code and never charged to the published limit', async () => {
    service = await rebuilt({ REFUSED_REQUESTS_PER_MINUTE: '20' });
    const { secret, token } = await tokens.create({ name: 'modern' });
    const refused = [
      await postModern(secret, { ...headers, 'Mcp-Name': 'rate_limit_status' }, modernCall),
      await postModern(secret, without('Mcp-Name'), modernCall),
      await postModern(secret, without('Mcp-Method'), modernCall),
      await postModern(secret, without('MCP-Protocol-Version'), modernCall),
      await postModern(secret, { ...headers, 'MCP-Protocol-Version': '2027-01-01' }, unknownRevision),
    ];
    expect(refused.map((r) => [r.status, r.body.error.code])).toEqual([[400, -32020], [400, -32020], [400, -32020], [400, -32020], [400, -32022]]);
    expect((await service.limiter.consume(token.id, { cost: 0 })).remaining).toBe(50);
    // The same call with its headers right is served and charged once.
    const served = await postModern(secret, headers, modernCall);
    expect(served.status).toBe(200);
    expect(served.headers['x-ratelimit-remaining']).toBe('49');
  });

  test('count against the refused-request budget instead', async () => {
    const { secret } = await tokens.create({ name: 'modern-sloppy' });
    for (let i = 0; i < 3; i++) expect((await postModern(secret, without('Mcp-Name'), modernCall)).status).toBe(400);
    const cutOff = await postModern(secret, headers, modernCall);
    expect(cutOff.status).toBe(429);
    expect(cutOff.body.error.data.reason).toBe('refused_requests');
  });
});

async function rebuilt(env: Record<string, string>): Promise<Service> {
  await service.release();
  const next = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), RATE_LIMIT_PER_MINUTE: '50', ...env }), { logger: silentLogger, clock: () => FROZEN_MS });
  tokens = new TokenService({ store: next.tokenStore, tiers: ['default'] });
  return next;
}
