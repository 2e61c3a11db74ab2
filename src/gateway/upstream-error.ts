import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';

/**
 * What went wrong upstream, in words a caller can act on:
 * - unreachable: no connection (refused, DNS, reset);
 * - timeout: no answer within UPSTREAM_TIMEOUT_MS;
 * - refused: the upstream answered HTTP 401/403 (our credential) or another 4xx/5xx;
 * - protocol: the upstream answered with a JSON-RPC error (`code`).
 */
export type UpstreamFailureKind = 'unreachable' | 'timeout' | 'refused' | 'protocol';

/**
 * The upstream's own error text is never passed on (it may carry a stack, a
 * path or a URL with credentials); only JSON-RPC errors that are about the
 * caller's request (unknown tool, bad params) keep theirs, which is what
 * the caller needs to fix it.
 */
const CALLER_FACING_CODES = new Set([-32600, -32601, -32602, -32002]);
const MAX_MESSAGE_CHARS = 200;

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

export function upstreamErrorOf(error: unknown, timeoutMs: number): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (ProtocolError.isInstance(error)) {
    const code = (error as ProtocolError).code;
    if (CALLER_FACING_CODES.has(code)) return new UpstreamError('protocol', clip(stripPrefix((error as Error).message)), code);
    return new UpstreamError('protocol', `the upstream MCP server answered with error ${code}`, code);
  }
  if (SdkHttpError.isInstance(error)) {
    const status = (error as SdkHttpError).status;
    return new UpstreamError('refused', status === 401 || status === 403 ? `the upstream MCP server refused firelimit's credential (HTTP ${status})` : `the upstream MCP server answered HTTP ${status}`);
  }
  if (SdkError.isInstance(error) && (error as SdkError).code === SdkErrorCode.RequestTimeout) {
    return new UpstreamError('timeout', `the upstream MCP server did not answer within ${timeoutMs} ms`);
  }
  if (isAbort(error)) return new UpstreamError('timeout', `the upstream MCP server did not answer within ${timeoutMs} ms`);
  return new UpstreamError('unreachable', 'the upstream MCP server is unreachable');
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

function stripPrefix(message: string): string {
  return message.replace(/^MCP error -?\d+:\s*/, '');
}

function clip(message: string): string {
  return message.length <= MAX_MESSAGE_CHARS ? message : `${message.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}
