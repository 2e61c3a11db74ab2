import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { mcpProtocolProblem } from '../../src/http/mcp-protocol-check';

const ACCEPT = 'application/json, text/event-stream';
const ok = { accept: ACCEPT, 'content-type': 'application/json' };
const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } };
const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const unsupported = `Bad Request: Unsupported protocol version: 1999-01-01 (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`;

// The status, code and message the SDK 1.32 transport answers each case with (webStandardStreamableHttp.js handlePostRequest).
test.each([
  ['a well-formed call', ok, call, undefined],
  ['a call naming a supported version', { ...ok, 'mcp-protocol-version': '2025-06-18' }, call, undefined],
  ['no Accept', { 'content-type': 'application/json' }, call, { status: 406, code: -32000, message: 'Not Acceptable: Client must accept both application/json and text/event-stream' }],
  ['Accept without text/event-stream', { ...ok, accept: 'application/json' }, call, { status: 406, code: -32000 }],
  ['Accept without application/json', { ...ok, accept: 'text/event-stream' }, call, { status: 406, code: -32000 }],
  ['Accept as */* (the SDK wants both named)', { ...ok, accept: '*/*' }, call, { status: 406, code: -32000 }],
  ['a Content-Type that is not JSON', { ...ok, 'content-type': 'text/plain' }, call, { status: 415, code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' }],
  ['an unsupported MCP-Protocol-Version', { ...ok, 'mcp-protocol-version': '1999-01-01' }, call, { status: 400, code: -32000, message: unsupported }],
  ['an unsupported version on initialize (not checked there)', { ...ok, 'mcp-protocol-version': '1999-01-01' }, initialize, undefined],
  ['initialize alone in a batch', ok, [initialize], undefined],
  ['initialize batched with another message', ok, [initialize, call], { status: 400, code: -32600, message: 'Invalid Request: Only one initialization request is allowed' }],
])('%s', (_label, headers, body, expected) => {
  const problem = mcpProtocolProblem(headers, body);
  if (expected === undefined) expect(problem).toBeUndefined();
  else expect(problem).toMatchObject(expected);
});

describe('held to the SDK transport itself', () => {
  // The same refusals, asked of the real transport: if an SDK upgrade changes a status or a code, this fails.
  test.each([
    ['no Accept', { 'content-type': 'application/json' }, call],
    ['Accept without text/event-stream', { ...ok, accept: 'application/json' }, call],
    ['an unsupported MCP-Protocol-Version', { ...ok, 'mcp-protocol-version': '1999-01-01' }, call],
    ['initialize batched with another message', ok, [initialize, call]],
  ])('%s', async (_label, headers, body) => {
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
});
