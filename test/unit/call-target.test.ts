import { callTargetsOf, RESPONSE_METHOD } from '../../src/library/mcp/call-target';

describe('callTargetsOf: what each message of a body asks for', () => {
  test.each<[string, unknown, unknown[]]>([
    ['a tool call gives its method and tool', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search' } }, [{ method: 'tools/call', tool: 'search' }]],
    ['a tool call whose name is not a string gives no tool', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 42 } }, [{ method: 'tools/call' }]],
    ['a tool call with null params gives no tool', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: null }, [{ method: 'tools/call' }]],
    ['a tool call with no params gives no tool', { jsonrpc: '2.0', id: 1, method: 'tools/call' }, [{ method: 'tools/call' }]],
    ['a tool call with string params gives no tool', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: 'search' }, [{ method: 'tools/call' }]],
    ['another method with a params name gives no tool', { jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'search' } }, [{ method: 'prompts/get' }]],
    ['a method without params gives the method', { jsonrpc: '2.0', id: 1, method: 'ping' }, [{ method: 'ping' }]],
    ['a message whose method is not a string is a response', { jsonrpc: '2.0', id: 1, method: 7, params: { name: 'search' } }, [{ method: RESPONSE_METHOD }]],
    ['a message without a method is a response', { jsonrpc: '2.0', id: 1, result: {} }, [{ method: RESPONSE_METHOD }]],
    ['null is a response', null, [{ method: RESPONSE_METHOD }]],
    ['a number is a response', 5, [{ method: RESPONSE_METHOD }]],
    ['a string is a response', 'tools/call', [{ method: RESPONSE_METHOD }]],
    ['an empty batch gives no target', [], []],
    [
      'a batch gives one target per entry, in order, each read on its own',
      [null, { jsonrpc: '2.0', method: 'tools/call', params: { name: 'a' } }, { jsonrpc: '2.0', id: 2, result: {} }, { jsonrpc: '2.0', method: 'notifications/initialized' }],
      [{ method: RESPONSE_METHOD }, { method: 'tools/call', tool: 'a' }, { method: RESPONSE_METHOD }, { method: 'notifications/initialized' }],
    ],
  ])('%s', (_name, body, targets) => {
    expect(callTargetsOf(body)).toEqual(targets);
  });

  test('a target without a tool has no tool field at all', () => {
    const [target] = callTargetsOf({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} });
    expect(target !== undefined && 'tool' in target).toBe(false);
  });

  test('a client response is priced under the method "(response)"', () => {
    expect(RESPONSE_METHOD).toBe('(response)');
  });
});
