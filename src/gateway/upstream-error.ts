import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { callerFacingText } from './caller-facing-text';

/**
 * What went wrong upstream, in words a caller can act on:
 * - unreachable: no connection (refused, DNS, reset);
 * - timeout: no answer within UPSTREAM_TIMEOUT_MS;
 * - refused: the upstream answered HTTP 401/403 (our credential) or another 4xx/5xx;
 * - protocol: the upstream answered with a JSON-RPC error (`code`);
 * - invalid: the upstream answered, but not with MCP (malformed JSON, not
 *   JSON-RPC, a result that fails its schema, too large an answer).
 */
export type UpstreamFailureKind = 'unreachable' | 'timeout' | 'refused' | 'protocol' | 'invalid';

/**
 * The upstream's own error text is never passed on (it may carry a stack, a
 * path or a URL with credentials); only JSON-RPC errors that are about the
 * caller's request (unknown tool, bad params) keep theirs, which is what
 * the caller needs to fix it.
 */
const CALLER_FACING_CODES = new Set([-32600, -32601, -32602, -32002]);

export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';

  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    /** The upstream's JSON-RPC error code, for `protocol`. */
    readonly code?: number,
  ) {
    super(message);
  }
}

/**
 * `secrets`: values the upstream might echo (the configured Authorization and its credential), masked in what is kept
 * of its text (./caller-facing-text).
 */
export function upstreamErrorOf(error: unknown, timeoutMs: number, secrets: readonly string[] = []): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (ProtocolError.isInstance(error)) {
    const code = (error as ProtocolError).code;
    if (CALLER_FACING_CODES.has(code)) {
      const text = callerFacingText((error as Error).message, secrets);
      return new UpstreamError('protocol', text === '' ? `the upstream MCP server answered with error ${code}` : text, code);
    }
    return new UpstreamError('protocol', `the upstream MCP server answered with error ${code}`, code);
  }
  if (SdkHttpError.isInstance(error)) {
    const status = (error as SdkHttpError).status;
    return new UpstreamError('refused', status === 401 || status === 403 ? `the upstream MCP server refused firelimit's credential (HTTP ${status})` : `the upstream MCP server answered HTTP ${status}`);
  }
  if (SdkError.isInstance(error) && (error as SdkError).code === SdkErrorCode.RequestTimeout) {
    return new UpstreamError('timeout', `the upstream MCP server did not answer within ${timeoutMs} ms`);
  }
  if (isInvalidAnswer(error)) return new UpstreamError('invalid', 'the upstream MCP server sent something that is not a valid MCP answer');
  if (isAbort(error)) return new UpstreamError('timeout', `the upstream MCP server did not answer within ${timeoutMs} ms`);
  return new UpstreamError('unreachable', 'the upstream MCP server is unreachable');
}

/**
 * What the SDK's transport and client throw at an answer they cannot read: JSON.parse, the JSON-RPC schema (zod), a
 * wrong content type, a result that fails its schema, list pages that never end (the client stops after listMaxPages).
 */
const INVALID_ANSWER_CODES: ReadonlySet<string> = new Set([SdkErrorCode.ClientHttpUnexpectedContent, SdkErrorCode.InvalidResult, SdkErrorCode.ListPaginationExceeded]);

/** By name, not instanceof: the JSON.parse inside fetch's Response.json() throws its realm's SyntaxError, not ours (and under jest the realms differ). */
const INVALID_ANSWER_ERRORS: ReadonlySet<unknown> = new Set(['SyntaxError', 'ZodError']);

function isInvalidAnswer(error: unknown): boolean {
  if (typeof error === 'object' && error !== null && INVALID_ANSWER_ERRORS.has((error as { name?: unknown }).name)) return true;
  return SdkError.isInstance(error) && INVALID_ANSWER_CODES.has((error as SdkError).code);
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}
