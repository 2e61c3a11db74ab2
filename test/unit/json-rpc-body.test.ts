import { parseJsonRpcBody } from '../../src/http/json-rpc-body';

const limits = { maxDepth: 64, maxBatchMessages: 100 };
const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
const bytes = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

describe('parseJsonRpcBody', () => {
  test.each([
    ['a message', bytes(ping), { ok: true, body: ping }],
    ['a batch at the bound', bytes(Array.from({ length: 100 }, () => ping)), { ok: true }],
    ['malformed JSON', bytes('{"jsonrpc":'), { ok: false, status: 400, body: { id: null, error: { code: -32700 } } }],
    ['bytes that are not UTF-8', Buffer.from([0x22, 0xc3, 0x28, 0x22]), { ok: false, status: 400, body: { error: { code: -32700 } } }],
    ['JSON that is not JSON-RPC, keeping its id', bytes({ id: 3, hello: 'world' }), { ok: false, status: 400, body: { id: 3, error: { code: -32600 } } }],
    ['nesting past the bound', bytes('['.repeat(65) + ']'.repeat(65)), { ok: false, status: 400, body: { error: { code: -32600, data: { reason: 'too_deep', maxDepth: 64 } } } }],
    ['a batch past the bound', bytes(Array.from({ length: 101 }, () => ping)), { ok: false, status: 400, body: { error: { code: -32600, data: { reason: 'batch_too_large' } } } }],
  ])('%s', (_label, raw, expected) => {
    expect(parseJsonRpcBody(raw, limits)).toMatchObject(expected);
  });

  test('what the scan refuses never reaches JSON.parse', () => {
    const parse = jest.spyOn(JSON, 'parse');
    parseJsonRpcBody(bytes('['.repeat(500_000) + ']'.repeat(500_000)), limits);
    parseJsonRpcBody(bytes(Array.from({ length: 10_000 }, () => ping)), limits);
    expect(parse).not.toHaveBeenCalled();
    parse.mockRestore();
  });
});
