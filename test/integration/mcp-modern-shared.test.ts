import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, createMcpHandler, PROTOCOL_VERSION_META_KEY, type AuthInfo } from '@modelcontextprotocol/server';
import { loadConfig } from '../../src/config/config';
import { buildMcpServer } from '../../src/mcp/build-mcp-server';
import { authInfoFor } from '../../src/mcp/call-context';
import { isPlainModernRequest, MODERN_REVISION, ModernExchange } from '../../src/mcp/modern-exchange';
import { tools } from '../../src/mcp/tools';
import type { ToolContext } from '../../src/mcp/tool-registry';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import { createCapturingLogger } from '../support/capturing-logger';

/**
 * The shared 2026-era server answers plain requests itself; every answer it
 * gives must be the one the SDK's own entry gives for the same request, and
 * what the SDK's ladder refuses must be handed back to the entry.
 */
const config = loadConfig({ RATE_LIMIT_PER_MINUTE: '120' });
const logger = createCapturingLogger();
const envelope = { [PROTOCOL_VERSION_META_KEY]: MODERN_REVISION, [CLIENT_INFO_META_KEY]: { name: 't', version: '1' }, [CLIENT_CAPABILITIES_META_KEY]: {} };

function modern(method: string, params: Record<string, unknown> = {}, id: number | string = 1) {
  return { jsonrpc: '2.0' as const, id, method, params: { ...params, _meta: envelope } };
}

function headersFor(method: string, name?: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json',
    'mcp-protocol-version': MODERN_REVISION,
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': name }),
  };
}

let authInfo: AuthInfo;
let exchange: ModernExchange;
beforeAll(async () => {
  const limiter = await createRateLimiter({ policy: config.rateLimit.defaultTier.policies[0] });
  const decision = await limiter.consume('tok_m');
  const context: ToolContext = {
    token: { id: 'tok_m', name: 'modern', tier: 'default', scopes: ['mcp'] },
    decision,
    limiter,
    tier: config.rateLimit.defaultTier,
    clock: () => 1_700_000_000_000,
  };
  authInfo = authInfoFor(context);
  exchange = await ModernExchange.connect(buildMcpServer(config, tools, logger, { modernRevision: MODERN_REVISION }), () => undefined);
});
afterAll(() => exchange.close());

test.each([
  ['tools/call whoami', 'tools/call', { name: 'whoami', arguments: {} }, 'whoami'],
  ['tools/call of an unknown tool', 'tools/call', { name: 'nope', arguments: {} }, 'nope'],
  ['tools/list', 'tools/list', {}, undefined],
  ['resources/list', 'resources/list', {}, undefined],
  ['resources/read of the limits', 'resources/read', { uri: 'firelimit://limits' }, 'firelimit://limits'],
  ['resources/read of an unknown resource', 'resources/read', { uri: 'firelimit://nope' }, 'firelimit://nope'],
  ['server/discover', 'server/discover', {}, undefined],
])('%s: answered on the shared server, as the SDK entry answers it', async (_label, method, params, name) => {
  const body = modern(method, params, 'q1');
  const headers = headersFor(method, name);
  expect(isPlainModernRequest(headers, body)).toBe(true);
  const ours = await exchange.answer(body, authInfo, new AbortController().signal);
  expect(ours.status).toBe(200);

  const entry = createMcpHandler(() => buildMcpServer(config, tools, logger), { legacy: 'reject' });
  const response = await entry.fetch(new Request('http://localhost/mcp', { method: 'POST', headers, body: JSON.stringify(body) }), { authInfo });
  expect(response.status).toBe(200);
  expect(ours).toEqual({ status: 200, body: await response.json() });
  await entry.close();
});

test.each([
  ['a batch', [modern('tools/list')], headersFor('tools/list')],
  ['a notification', { jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: envelope } }, headersFor('notifications/initialized')],
  ['a method outside the plain set', modern('prompts/list'), headersFor('prompts/list')],
  ['ping (not a 2026-07-28 method; the entry answers it)', modern('ping'), headersFor('ping')],
  ['a missing Mcp-Method header', modern('tools/list'), { ...headersFor('tools/list'), 'mcp-method': undefined }],
  ['an Mcp-Method that is not the body’s', modern('tools/list'), headersFor('resources/list')],
  ['an Mcp-Name that is not the tool’s', modern('tools/call', { name: 'whoami', arguments: {} }), headersFor('tools/call', 'rate_limit_status')],
  ['an Mcp-Name on a method that takes none', modern('tools/list'), headersFor('tools/list', 'x')],
  ['another revision in the envelope', { ...modern('tools/list'), params: { _meta: { ...envelope, [PROTOCOL_VERSION_META_KEY]: '2027-01-01' } } }, headersFor('tools/list')],
  ['a tool name that would be sent encoded', modern('tools/call', { name: 'wh ami ', arguments: {} }), headersFor('tools/call', 'wh ami ')],
  ['a call asking for progress (the entry may stream its answer)', { ...modern('tools/call', { name: 'whoami', arguments: {} }), params: { name: 'whoami', arguments: {}, _meta: { ...envelope, progressToken: 'p' } } }, headersFor('tools/call', 'whoami')],
])('%s goes to the SDK entry', (_label, body, headers) => {
  expect(isPlainModernRequest(headers as Record<string, string | undefined>, body)).toBe(false);
});

test('a request the protocol layer refuses at its gates (an envelope it rejects) is handed back to the entry, not answered', async () => {
  const body = { ...modern('tools/list'), params: { _meta: { [PROTOCOL_VERSION_META_KEY]: MODERN_REVISION } } };
  expect(await exchange.answer(body, authInfo, new AbortController().signal)).toEqual({ status: 'fallback' });
});

test('requests reach the protocol layer past its zod type dispatch (an SDK without the entry would still answer, through onmessage)', () => {
  expect(exchange.skipsTypeDispatch).toBe(true);
});
