import { ProtocolError, SdkHttpError } from '@modelcontextprotocol/client';

/**
 * The JSON-RPC code SDK servers (TypeScript 1.x and 2.x) put on their
 * "Session not found" answer. Over the wire it means only that: the SDK's
 * -32001 request timeout is local to a client and never sent.
 */
const SESSION_NOT_FOUND_CODE = -32001;

/** Answers about a session, not about the request: "No valid session ID provided", "Session not found", "session not found". */
const NAMES_A_SESSION = /\bsession\b/i;

/**
 * Whether `error`, the failure of a request that carried a session id, says
 * the upstream no longer knows that session (it restarted, or expired it),
 * so the request did not run and a new session may be opened for it:
 * - HTTP 404: what the transport spec asks a server to answer;
 * - HTTP 400 with a JSON-RPC error that is the SDK's session-not-found code,
 *   or whose message (or plain-text body) is about the session: the reference
 *   server-everything answers "Bad Request: No valid session ID provided",
 *   older Python servers the same words as text/plain;
 * - a JSON-RPC error with the SDK's session-not-found code, or one about the
 *   session, delivered as the request's answer (the SDK client hands a
 *   4xx's JSON-RPC body to the request whose id it carries).
 * Read from the SDK's structured error (status, body, code), not its
 * message, which the SDK words itself.
 */
export function isForgottenSession(error: unknown): boolean {
  if (SdkHttpError.isInstance(error)) {
    const status = (error as SdkHttpError).status;
    if (status === 404) return true;
    if (status !== 400) return false;
    return bodySaysSessionGone(bodyOf(error as SdkHttpError));
  }
  if (ProtocolError.isInstance(error)) {
    const { code, message } = error as ProtocolError;
    if (code === SESSION_NOT_FOUND_CODE) return true;
    // -32000 is what every SDK uses for its transport's own refusals; only one that names the session is about it.
    return code === -32000 && NAMES_A_SESSION.test(message);
  }
  return false;
}

function bodyOf(error: SdkHttpError): string {
  const data = (error as { data?: unknown }).data;
  const text = typeof data === 'object' && data !== null ? (data as { text?: unknown }).text : undefined;
  return typeof text === 'string' ? text : '';
}

function bodySaysSessionGone(body: string): boolean {
  const trimmed = body.trim().slice(0, 4096);
  if (trimmed.startsWith('{')) {
    try {
      const parsed = JSON.parse(trimmed) as { error?: { code?: unknown; message?: unknown } };
      const code = parsed.error?.code;
      const message = parsed.error?.message;
      if (code === SESSION_NOT_FOUND_CODE) return true;
      return typeof message === 'string' && NAMES_A_SESSION.test(message);
    } catch {
      return false;
    }
  }
  return NAMES_A_SESSION.test(trimmed);
}
