import fc from 'fast-check';
import type { Response } from 'express';
import { JsonRpcCode, jsonRpcError, requestIdOf, sendJsonRpcError, type JsonRpcId } from '../../src/library/express/json-rpc-error';

/** JSON-RPC 2.0 §5.1: the errors the spec itself defines, each with its fixed code. */
const SPEC_CODES: Readonly<Record<string, number>> = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
};

describe('JsonRpcCode', () => {
  it("gives the spec's own errors the spec's codes", () => {
    for (const [name, code] of Object.entries(SPEC_CODES)) expect({ name, code: JsonRpcCode[name as keyof typeof JsonRpcCode] }).toEqual({ name, code });
  });

  it('keeps every server-defined code inside the reserved -32099..-32000 range', () => {
    const serverDefined = Object.entries(JsonRpcCode).filter(([name]) => !(name in SPEC_CODES));
    expect(serverDefined.length).toBeGreaterThan(0);
    for (const [name, code] of serverDefined) {
      expect({ name, inRange: Number.isInteger(code) && code >= -32099 && code <= -32000 }).toEqual({ name, inRange: true });
    }
  });

  it('gives each error a code of its own, so a client can tell them apart', () => {
    const codes = Object.values(JsonRpcCode);
    expect(new Set(codes).size).toBe(codes.length);
  });
});

describe('jsonRpcError', () => {
  it.each<{ name: string; id: JsonRpcId; data: unknown; body: unknown }>([
    { name: 'without data, no data member at all', id: 7, data: undefined, body: { jsonrpc: '2.0', id: 7, error: { code: -32029, message: 'm' } } },
    { name: 'with object data', id: 'req-1', data: { retryAfterSeconds: 3 }, body: { jsonrpc: '2.0', id: 'req-1', error: { code: -32029, message: 'm', data: { retryAfterSeconds: 3 } } } },
    { name: 'with null data (null is a value, kept)', id: null, data: null, body: { jsonrpc: '2.0', id: null, error: { code: -32029, message: 'm', data: null } } },
    { name: 'with falsy data 0', id: 0, data: 0, body: { jsonrpc: '2.0', id: 0, error: { code: -32029, message: 'm', data: 0 } } },
    { name: 'with an empty-string id', id: '', data: '', body: { jsonrpc: '2.0', id: '', error: { code: -32029, message: 'm', data: '' } } },
  ])('builds a JSON-RPC 2.0 error $name', ({ id, data, body }) => {
    const built = jsonRpcError(id, JsonRpcCode.RateLimited, 'm', data);
    expect(built).toStrictEqual(body);
    expect(JSON.parse(JSON.stringify(built))).toStrictEqual(body);
  });

  it('omits data when not given, so the wire body has exactly code and message', () => {
    const built = jsonRpcError(1, JsonRpcCode.InternalError, 'Internal error');
    expect(Object.keys(built.error)).toEqual(['code', 'message']);
    expect(JSON.stringify(built)).toBe('{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}');
  });
});

describe('requestIdOf', () => {
  it.each<{ name: string; body: unknown; id: JsonRpcId }>([
    { name: 'a numeric id', body: { jsonrpc: '2.0', id: 5, method: 'tools/list' }, id: 5 },
    { name: 'id 0', body: { jsonrpc: '2.0', id: 0, method: 'ping' }, id: 0 },
    { name: 'a string id', body: { jsonrpc: '2.0', id: 'abc', method: 'ping' }, id: 'abc' },
    { name: 'an empty-string id', body: { id: '' }, id: '' },
    { name: 'a null id', body: { id: null }, id: null },
    { name: 'no id (a notification)', body: { jsonrpc: '2.0', method: 'notifications/initialized' }, id: null },
    { name: 'an object id (not allowed by the spec)', body: { id: { n: 1 } }, id: null },
    { name: 'a boolean id', body: { id: true }, id: null },
    { name: 'an array id', body: { id: [1] }, id: null },
    { name: 'a batch (array body)', body: [{ jsonrpc: '2.0', id: 1, method: 'ping' }], id: null },
    { name: 'an array with an id property', body: Object.assign([], { id: 9 }), id: null },
    { name: 'null', body: null, id: null },
    { name: 'undefined (no body parsed)', body: undefined, id: null },
    { name: 'a string body', body: '{"id":1}', id: null },
    { name: 'a number body', body: 1, id: null },
  ])('$name gives $id', ({ body, id }) => {
    expect(requestIdOf(body)).toBe(id);
  });

  it('echoes any string or number id and answers null for anything else', () => {
    fc.assert(
      fc.property(fc.anything(), (id) => {
        const expected = typeof id === 'string' || typeof id === 'number' ? id : null;
        expect(requestIdOf({ jsonrpc: '2.0', id, method: 'x' })).toBe(expected);
      }),
    );
  });
});

describe('sendJsonRpcError', () => {
  it('writes the given HTTP status and the body as JSON', () => {
    const written: unknown[] = [];
    const res = {
      status(code: number) {
        written.push(['status', code]);
        return this;
      },
      json(body: unknown) {
        written.push(['json', body]);
        return this;
      },
    };
    const body = jsonRpcError(3, JsonRpcCode.BackendUnavailable, 'down', { retryAfterSeconds: 5 });
    sendJsonRpcError(res as unknown as Response, 503, body);
    expect(written).toEqual([
      ['status', 503],
      ['json', body],
    ]);
  });
});
