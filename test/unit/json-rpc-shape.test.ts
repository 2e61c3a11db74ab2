import { isJSONRPCErrorResponse, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResultResponse } from '@modelcontextprotocol/server';
import fc from 'fast-check';
import { isJsonRpcErrorResponse, isJsonRpcMessage, isJsonRpcNotification, isJsonRpcRequest, isJsonRpcResultResponse } from '../../src/http/json-rpc-shape';

const GUARDS = [
  ['request', isJsonRpcRequest, isJSONRPCRequest],
  ['notification', isJsonRpcNotification, isJSONRPCNotification],
  ['result response', isJsonRpcResultResponse, isJSONRPCResultResponse],
  ['error response', isJsonRpcErrorResponse, isJSONRPCErrorResponse],
] as const;

// Near misses of every shape: the right keys with values of every JSON kind, an extra key, a missing one.
const id = fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.double(), fc.constant(2 ** 53), fc.constant(null), fc.boolean(), fc.constant(1.5));
const json = fc.letrec((tie) => ({
  any: fc.oneof({ depthSize: 'small' }, fc.string({ maxLength: 3 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(tie('any'), { maxLength: 2 }), fc.dictionary(fc.string({ maxLength: 3 }), tie('any'), { maxKeys: 2 })),
})).any;
const meta = fc.record(
  { progressToken: fc.oneof(id, json), 'io.modelcontextprotocol/related-task': fc.oneof(fc.record({ taskId: fc.oneof(fc.string(), json) }), json), other: json },
  { requiredKeys: [] },
);
const params = fc.oneof(fc.record({ _meta: fc.oneof(meta, json), name: json }, { requiredKeys: [] }), json);
const error = fc.oneof(fc.record({ code: id, message: fc.oneof(fc.string(), json), data: json }, { requiredKeys: [] }), json);
const result = fc.oneof(fc.record({ _meta: fc.oneof(json, fc.record({ serverInfo: json })), content: json }, { requiredKeys: [] }), json);
const message = fc.oneof(
  fc.record({ jsonrpc: fc.oneof(fc.constant('2.0'), json), id, method: fc.oneof(fc.constantFrom('tools/call', 'initialize'), json), params, result, error, extra: json }, { requiredKeys: [] }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: fc.constant('tools/call'), params }),
  fc.record({ jsonrpc: fc.constant('2.0'), method: fc.constant('notifications/initialized'), params }, { requiredKeys: ['jsonrpc', 'method'] }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.oneof(fc.string(), fc.integer()), result }),
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.oneof(fc.string(), fc.integer()), error }, { requiredKeys: ['jsonrpc', 'error'] }),
  json,
);

describe('the plain JSON-RPC guards', () => {
  it.each(GUARDS)('give the SDK guard\'s verdict on any value (%s)', (_name, ours, sdks) => {
    fc.assert(
      fc.property(message, (value) => {
        expect(ours(value)).toBe(sdks(value));
      }),
      { numRuns: 3000 },
    );
  });

  it('accept the messages an MCP client sends and refuse what is not one', () => {
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: { progressToken: 'p' } } };
    expect([call, { jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 'a', result: {} }, { jsonrpc: '2.0', error: { code: -1, message: 'x' } }].map(isJsonRpcMessage)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    const refused = [null, [], 'x', { ...call, jsonrpc: '1.0' }, { ...call, id: 1.5 }, { ...call, id: null }, { ...call, extra: 1 }, { ...call, params: null }, { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'x' } }];
    expect(refused.map(isJsonRpcMessage)).toEqual(refused.map(() => false));
  });
});
