import { ProtocolError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { isForgottenSession } from '../../../src/gateway/forgotten-session';

const http = (status: number, text?: string): SdkHttpError =>
  new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${text ?? ''}`, { status, statusText: '', text } as never);

/** What real servers answer a request whose Mcp-Session-Id they do not know, and answers that are about something else. */
const CASES: readonly [string, unknown, boolean][] = [
  ['SDK 1.x/2.x servers: 404 Session not found', http(404, JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null })), true],
  ['Go SDK: 404 as plain text', http(404, 'session not found\n'), true],
  ['server-everything after a restart: 400 No valid session ID provided', http(400, JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' } })), true],
  ['older Python servers: 400 as plain text', http(400, 'Bad Request: No valid session ID provided'), true],
  ['a 400 with the SDK session-not-found code and other words', http(400, JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'gone' }, id: null })), true],
  ['a JSON-RPC error about the session, handed to the request by the SDK', new ProtocolError(-32000, 'Bad Request: No valid session ID provided'), true],
  ['a JSON-RPC session-not-found answer handed to the request', new ProtocolError(-32001, 'Session not found'), true],
  ['a 400 about the request, not the session', http(400, JSON.stringify({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: bad params' }, id: null })), false],
  ['a 400 with no body', http(400), false],
  ['a 400 whose body is not JSON and says nothing of a session', http(400, 'Bad Request'), false],
  ['a 400 with broken JSON', http(400, '{"error": {"message": "session'), false],
  ['a 401', http(401, 'session expired, log in again'), false],
  ['a 500', http(500, 'Internal error'), false],
  ['a tool error that mentions a session', new ProtocolError(-32602, 'session_id is required'), false],
  ['a generic -32000 that is not about the session', new ProtocolError(-32000, 'Bad Request: Server not initialized'), false],
  ['not an SDK error', new Error('Session not found'), false],
];

describe('an upstream that no longer knows the session, recognised from the SDK error', () => {
  it.each(CASES)('%s', (_name, error, forgotten) => {
    expect(isForgottenSession(error)).toBe(forgotten);
  });
});
