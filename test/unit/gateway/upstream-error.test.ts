import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { UpstreamError, upstreamErrorOf } from '../../../src/gateway/upstream-error';

describe('upstream failures are worded by kind, never with the upstream internals', () => {
  const internals = 'at handler (/srv/app/secret.js:42) postgres://admin:pw@db/x';
  it.each([
    ['a refused connection', new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ECONNREFUSED ${internals}`), { code: 'ECONNREFUSED' }) }), 'unreachable', /unreachable/],
    ['an SDK request timeout', new SdkError(SdkErrorCode.RequestTimeout, `Request timed out ${internals}`), 'timeout', /did not answer within 1234 ms/],
    ['an aborted fetch', Object.assign(new Error(internals), { name: 'AbortError' }), 'timeout', /within 1234 ms/],
    ['HTTP 401', new SdkHttpError(SdkErrorCode.ClientHttpAuthentication, internals, { status: 401 } as never), 'refused', /refused firelimit's credential \(HTTP 401\)/],
    ['HTTP 502', new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented ?? SdkErrorCode.SendFailed, internals, { status: 502 } as never), 'refused', /answered HTTP 502/],
    ['an internal JSON-RPC error', new ProtocolError(-32603, internals), 'protocol', /answered with error -32603/],
    ['malformed JSON', new SyntaxError(`Unexpected end of JSON input ${internals}`), 'invalid', /not a valid MCP answer/],
    ['JSON that is not JSON-RPC', Object.assign(new Error(internals), { name: 'ZodError' }), 'invalid', /not a valid MCP answer/],
    ['a result that fails its schema', new SdkError(SdkErrorCode.InvalidResult, `Invalid result for tools/call: ${internals}`), 'invalid', /not a valid MCP answer/],
    ['list pages that never end', new SdkError(SdkErrorCode.ListPaginationExceeded, `tools/list exceeded 64 pages ${internals}`), 'invalid', /not a valid MCP answer/],
    ['a content type that is not MCP', new SdkError(SdkErrorCode.ClientHttpUnexpectedContent, `Unexpected content type: ${internals}`), 'invalid', /not a valid MCP answer/],
  ] as const)('%s', (_label, error, kind, words) => {
    const failure = upstreamErrorOf(error, 1234);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect(failure.kind).toBe(kind);
    expect(failure.message).toMatch(words);
    expect(failure.message).not.toContain('/srv/app');
    expect(failure.message).not.toContain('admin:pw');
  });

  it("keeps the upstream's words for errors about the caller's own request, clipped", () => {
    const failure = upstreamErrorOf(new ProtocolError(-32602, `Tool nope not found ${'x'.repeat(500)}`), 1000);
    expect(failure).toMatchObject({ kind: 'protocol', code: -32602 });
    expect(failure.message.startsWith('Tool nope not found')).toBe(true);
    expect(failure.message.length).toBeLessThanOrEqual(200);
  });
});
