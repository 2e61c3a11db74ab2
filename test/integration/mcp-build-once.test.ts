import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, McpServer, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import type { Express } from 'express';
import request from 'supertest';
import type { AuthenticatedToken } from '../../src/tokens/token-record';
import { buildTestApp, type TestApp } from '../support/mcp-test-app';

/**
 * Servers, tool registrations and schemas are built once, not per request,
 * while every call still answers for its own caller: many callers at once,
 * all using JSON-RPC id 1, each gets its own token back and the figures of
 * its own decision, in both protocol eras.
 */
const CALLERS = 6;
const CALLS_EACH = 8;
const tokens: Record<string, AuthenticatedToken> = Object.fromEntries(
  Array.from({ length: CALLERS }, (_, i) => [`fl_test_caller_${i}`, { id: `tok_caller${i}`, name: `caller ${i}`, tier: 'default', scopes: ['mcp'] }]),
);

const envelope = { [PROTOCOL_VERSION_META_KEY]: '2026-07-28', [CLIENT_INFO_META_KEY]: { name: 't', version: '1' }, [CLIENT_CAPABILITIES_META_KEY]: {} };

type EraName = '2025-11-25' | '2026-07-28';

function statusCall(app: Express, secret: string, era: EraName) {
  const modern = era === '2026-07-28';
  const req = request(app)
    .post('/mcp')
    .set('Authorization', `Bearer ${secret}`)
    .set('Content-Type', 'application/json')
    .set('Accept', 'application/json')
    .set('MCP-Protocol-Version', era);
  if (modern) req.set('Mcp-Method', 'tools/call').set('Mcp-Name', 'rate_limit_status');
  const params = { name: 'rate_limit_status', arguments: {}, ...(modern ? { _meta: envelope } : {}) };
  return req.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }));
}

let built: TestApp;
let registrations: jest.SpyInstance;

beforeAll(async () => {
  registrations = jest.spyOn(McpServer.prototype, 'registerTool');
  // A still clock: across a minute boundary the window would reset and two calls could share a remaining figure.
  const frozenAtMs = Date.now();
  built = await buildTestApp({ tokens, env: { RATE_LIMIT_PER_MINUTE: '1000' }, clock: () => frozenAtMs });
});
afterAll(async () => {
  registrations.mockRestore();
  await built.release();
});

test.each<EraName>(['2025-11-25', '2026-07-28'])('%s: concurrent callers, all with id 1, each see their own token and their own decision', async (era) => {
  const secrets = Object.keys(tokens);
  const calls = secrets.flatMap((secret) => Array.from({ length: CALLS_EACH }, () => ({ secret, pending: statusCall(built.app, secret, era) })));
  const answers = await Promise.all(calls.map(async ({ secret, pending }) => ({ secret, res: await pending })));
  for (const { secret, res } of answers) {
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(1);
    const structured = res.body.result.structuredContent as { tokenId: string; remaining: number };
    expect(structured.tokenId).toBe(tokens[secret]?.id);
    // The decision the tool reports is the one made for this very request, as its headers say.
    expect(structured.remaining).toBe(Number(res.headers['x-ratelimit-remaining']));
  }
  // Each caller's calls were counted one by one: their remaining figures are distinct.
  for (const secret of secrets) {
    const remaining = answers.filter((a) => a.secret === secret).map((a) => a.res.body.result.structuredContent.remaining as number);
    expect(new Set(remaining).size).toBe(CALLS_EACH);
  }
});

test('the tools are registered once per server, and servers are not built per request', async () => {
  const before = registrations.mock.calls.length;
  for (let i = 0; i < 20; i++) {
    const res = await statusCall(built.app, 'fl_test_caller_0', i % 2 === 0 ? '2025-11-25' : '2026-07-28');
    expect(res.status).toBe(200);
  }
  // Sequential calls: the 2025 server is the one built at boot, a 2026 exchange reuses an idle pooled server.
  expect(registrations.mock.calls.length - before).toBe(0);
});
