import fc from 'fast-check';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  createMcpHandler,
  McpServer,
  PROTOCOL_VERSION_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { acceptsJson, inspectMcpRequest, mcpProtocolProblem } from '../../src/http/mcp-protocol-check';

const ACCEPT = 'application/json, text/event-stream';
const ok = { accept: ACCEPT, 'content-type': 'application/json' };
const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } };
const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const envelope = { [PROTOCOL_VERSION_META_KEY]: '2026-07-28', [CLIENT_INFO_META_KEY]: { name: 't', version: '1' }, [CLIENT_CAPABILITIES_META_KEY]: {} };
const modernCall = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x', arguments: {}, _meta: envelope } };
const modernHeaders = { ...ok, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'x' };
const unknownRevisionCall = { ...modernCall, params: { ...modernCall.params, _meta: { ...envelope, [PROTOCOL_VERSION_META_KEY]: '2027-01-01' } } };
const base64Name = { ...modernHeaders, 'mcp-name': `=?base64?${Buffer.from('x').toString('base64')}?=` };
function withoutHeader(name: string): Record<string, string> {
  return Object.fromEntries(Object.entries(modernHeaders).filter(([key]) => key !== name));
}
const unsupported = `Bad Request: Unsupported protocol version: 1999-01-01 (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`;

test.each([
  ['a well-formed 2025 call', ok, call, 'legacy'],
  ['a call naming a supported version', { ...ok, 'mcp-protocol-version': '2025-06-18' }, call, 'legacy'],
  ['no Accept (any type will do)', { 'content-type': 'application/json' }, call, 'legacy'],
  ['Accept: application/json alone', { ...ok, accept: 'application/json' }, call, 'legacy'],
  ['Accept: */*', { ...ok, accept: '*/*' }, call, 'legacy'],
  ['an unsupported version on initialize (not checked there)', { ...ok, 'mcp-protocol-version': '1999-01-01' }, initialize, 'legacy'],
  ['initialize alone in a batch', ok, [initialize], 'legacy'],
  ['a 2026-07-28 call with its envelope and headers', modernHeaders, modernCall, 'modern'],
  ['a 2026-07-28 call whose Mcp-Name is the name in Base64', base64Name, modernCall, 'modern'],
  ['a 2026-07-28 call whose Mcp-Name has surrounding blanks', { ...modernHeaders, 'mcp-name': ' x\t' }, modernCall, 'modern'],
  ['a 2026-07-28 list, which has no Mcp-Name', { ...withoutHeader('mcp-name'), 'mcp-method': 'tools/list' }, { ...modernCall, method: 'tools/list', params: { _meta: envelope } }, 'modern'],
  ['a 2026-07-28 notification without any standard header', ok, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: envelope } }, 'modern'],
])('%s is let through, in the right era', (_label, headers, body, era) => {
  expect(inspectMcpRequest(headers, body)).toEqual({ ok: true, era });
});

test.each([
  ['Accept without application/json', { ...ok, accept: 'text/event-stream' }, call, { status: 406, code: -32000 }],
  ['Accept that refuses JSON with q=0', { ...ok, accept: 'application/json;q=0' }, call, { status: 406, code: -32000 }],
  ['a Content-Type that is not JSON', { ...ok, 'content-type': 'text/plain' }, call, { status: 415, code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' }],
  ['an unsupported MCP-Protocol-Version', { ...ok, 'mcp-protocol-version': '1999-01-01' }, call, { status: 400, code: -32000, message: unsupported }],
  ['initialize batched with another message', ok, [initialize, call], { status: 400, code: -32600, message: 'Invalid Request: Only one initialization request is allowed' }],
  ['a 2026 envelope under a 2025 version header', { ...modernHeaders, 'mcp-protocol-version': '2025-06-18' }, modernCall, { status: 400, code: -32020 }],
  ['a 2026 version header without the envelope', { ...ok, 'mcp-protocol-version': '2026-07-28' }, call, { status: 400, code: -32602 }],
  ['a 2026 call with an Mcp-Name that names another tool', { ...modernHeaders, 'mcp-name': 'y' }, modernCall, { status: 400, code: -32020 }],
  ['a 2026 call without Mcp-Name', withoutHeader('mcp-name'), modernCall, { status: 400, code: -32020 }],
  ['a 2026 call with a malformed Base64 Mcp-Name', { ...modernHeaders, 'mcp-name': '=?base64?***?=' }, modernCall, { status: 400, code: -32020 }],
  ['a 2026 call without Mcp-Method', withoutHeader('mcp-method'), modernCall, { status: 400, code: -32020 }],
  ['a 2026 call without MCP-Protocol-Version', withoutHeader('mcp-protocol-version'), modernCall, { status: 400, code: -32020 }],
  ['a 2026-era call naming a revision nobody serves', { ...modernHeaders, 'mcp-protocol-version': '2027-01-01' }, unknownRevisionCall, { status: 400, code: -32022 }],
])('%s is refused', (_label, headers, body, expected) => {
  expect(mcpProtocolProblem(headers, body)).toMatchObject(expected);
});

test.each([
  [undefined, true],
  ['', true],
  ['application/json', true],
  ['Application/JSON; q=0.5', true],
  ['application/*', true],
  ['text/html, */*;q=0.1', true],
  ['text/event-stream', false],
  ['application/json;q=0, text/event-stream', false],
  ['text/plain', false],
])('Accept %p allows a JSON answer: %p', (accept, expected) => {
  expect(acceptsJson(accept)).toBe(expected);
});

describe('held to the SDK itself', () => {
  // The same refusals, asked of the real SDK: if an upgrade changes a status, a code or a message, this fails.
  test.each([
    ['an unsupported MCP-Protocol-Version', { ...ok, 'mcp-protocol-version': '1999-01-01' }, call],
    ['initialize batched with another message', ok, [initialize, call]],
    ['a Content-Type that is not JSON', { ...ok, 'content-type': 'text/plain' }, call],
  ])('2025 transport: %s', async (_label, headers, body) => {
    const ours = mcpProtocolProblem(headers, body);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = new McpServer({ name: 't', version: '1' });
    await server.connect(transport);
    const response = await transport.handleRequest(
      new Request('http://localhost/mcp', { method: 'POST', headers: headers as Record<string, string>, body: JSON.stringify(body) }),
    );
    const sdkBody = (await response.json()) as { error: { code: number; message: string } };
    await server.close();
    expect(ours).toEqual({ status: response.status, code: sdkBody.error.code, message: sdkBody.error.message });
  });

  test.each([
    ['a 2026 envelope under a 2025 version header', { ...modernHeaders, 'mcp-protocol-version': '2025-06-18' }, modernCall],
    ['a 2026 version header without the envelope', { ...ok, 'mcp-protocol-version': '2026-07-28' }, call],
    ['an Mcp-Name that names another tool', { ...modernHeaders, 'mcp-name': 'y' }, modernCall],
    ['no Mcp-Name', withoutHeader('mcp-name'), modernCall],
    ['a malformed Base64 Mcp-Name', { ...modernHeaders, 'mcp-name': '=?base64?***?=' }, modernCall],
    ['no Mcp-Method', withoutHeader('mcp-method'), modernCall],
    ['no MCP-Protocol-Version', withoutHeader('mcp-protocol-version'), modernCall],
    ['a revision nobody serves', { ...modernHeaders, 'mcp-protocol-version': '2027-01-01' }, unknownRevisionCall],
  ])('2026 entry: %s', async (_label, headers, body) => {
    const ours = mcpProtocolProblem(headers, body);
    const handler = createMcpHandler(() => new McpServer({ name: 't', version: '1' }), { legacy: 'reject' });
    const response = await handler.fetch(
      new Request('http://localhost/mcp', { method: 'POST', headers: headers as Record<string, string>, body: JSON.stringify(body) }),
    );
    const sdkBody = (await response.json()) as { error: { code: number; message: string; data?: unknown } };
    await handler.close();
    expect(ours).toEqual({ status: response.status, code: sdkBody.error.code, message: sdkBody.error.message, data: sdkBody.error.data });
  });
});

describe('the 2026 header rungs, as a property held to the SDK entry', () => {
  const name = fc.stringMatching(/^[A-Za-z0-9_.-]{1,16}$/);
  const unicodeName = fc.string({ minLength: 1, maxLength: 8, unit: 'grapheme' });
  /** What the client puts in Mcp-Name for a body naming `bodyName`. */
  const nameHeader = (bodyName: string) => {
    // A header holds Latin-1 only (fetch refuses the rest): a name outside ASCII goes as the client sends it, in Base64.
    const raw = /^[\x20-\x7e]*$/.test(bodyName) ? bodyName : `=?base64?${Buffer.from(bodyName, 'utf8').toString('base64')}?=`;
    return fc.oneof(
      fc.constant<string | undefined>(raw),
      fc.constant<string | undefined>(undefined),
      name,
      fc.constant(`  ${raw}\t`),
      fc.constant(`=?base64?${Buffer.from(bodyName, 'utf8').toString('base64')}?=`),
      unicodeName.map((other) => `=?base64?${Buffer.from(other, 'utf8').toString('base64')}?=`),
      fc.constant('=?base64?not base64?='),
    );
  };
  const method = fc.constantFrom('tools/call', 'prompts/get', 'resources/read', 'tools/list');
  const request = fc
    .record({ method, bodyName: fc.oneof(name, unicodeName), version: fc.constantFrom<string | undefined>('2026-07-28', undefined), sendMethod: fc.boolean() })
    .chain((r) => nameHeader(r.bodyName).map((header) => ({ ...r, header })));

  test('ours refuses exactly what the SDK refuses, with its status, code, message and data', async () => {
    const handler = createMcpHandler(() => new McpServer({ name: 't', version: '1' }), { legacy: 'reject' });
    try {
      await fc.assert(
        fc.asyncProperty(request, async ({ method: m, bodyName, version, sendMethod, header }) => {
          const field = m === 'resources/read' ? 'uri' : 'name';
          const body = { jsonrpc: '2.0', id: 5, method: m, params: { ...(m === 'tools/list' ? {} : { [field]: bodyName }), _meta: envelope } };
          const headers: Record<string, string> = { ...ok };
          if (version !== undefined) headers['mcp-protocol-version'] = version;
          if (sendMethod) headers['mcp-method'] = m;
          if (header !== undefined) headers['mcp-name'] = header;
          const ours = mcpProtocolProblem(headers, body);
          const response = await handler.fetch(new Request('http://localhost/mcp', { method: 'POST', headers, body: JSON.stringify(body) }));
          const sdk = (await response.json()) as { error?: { code: number; message: string; data?: unknown } };
          // The SDK's ladder refusals are 400s; anything else it served (a result, or a -32601/-32602 from the empty server).
          if (response.status === 400 && sdk.error !== undefined && [-32020, -32022].includes(sdk.error.code)) {
            expect(ours).toEqual({ status: 400, code: sdk.error.code, message: sdk.error.message, data: sdk.error.data });
          } else {
            expect(ours).toBeUndefined();
          }
        }),
        { numRuns: 150 },
      );
    } finally {
      await handler.close();
    }
  });
});
