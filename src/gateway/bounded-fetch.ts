import { UpstreamError } from './upstream-error';

/**
 * The most bytes firelimit reads of one answer from the upstream (16 MiB):
 * far above any tool result a model can use, far below what a 512 MiB Cloud
 * Run instance can hold a few of at once (docs/adr/0041-bounded-upstream-answers.md).
 */
export const UPSTREAM_MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** Statuses whose Response cannot carry a body (the constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

export interface AnswerBounds {
  /** How long one request and the reading of its answer may take, from the moment it is sent. */
  readonly deadlineMs: number;
  /** Past this many bytes the answer is cut off and read as an `invalid` UpstreamError. */
  readonly maxAnswerBytes: number;
}

/**
 * `base` with every request that carries a message (a POST, a DELETE) bound
 * by `deadlineMs` and its answer by `maxAnswerBytes`: past either, the
 * request is aborted, which closes its socket. The SDK's own request timeout
 * only stops waiting (a 2025-era client leaves the response stream open),
 * and it reads an answer however large. A GET is the session's standalone
 * stream, open by design for as long as the session lasts: not bound.
 */
export function boundedFetch(base: typeof fetch, bounds: AnswerBounds): typeof fetch {
  return async (input, init) => {
    if ((init?.method ?? 'GET').toUpperCase() === 'GET') return base(input, init);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new UpstreamError('timeout', `the upstream MCP server did not answer within ${bounds.deadlineMs} ms`)), bounds.deadlineMs);
    const signal = init?.signal == null ? abort.signal : AbortSignal.any([init.signal, abort.signal]);
    let response: Response;
    try {
      response = await base(input, { ...init, signal });
    } catch (error) {
      clearTimeout(timer);
      throw error;
    }
    if (response.body === null || NULL_BODY_STATUSES.has(response.status)) {
      clearTimeout(timer);
      return response;
    }
    let bytes = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytes += chunk.byteLength;
          if (bytes <= bounds.maxAnswerBytes) return controller.enqueue(chunk);
          const tooLarge = new UpstreamError('invalid', `the upstream MCP server answered more than ${bounds.maxAnswerBytes} bytes`);
          clearTimeout(timer);
          abort.abort(tooLarge);
          controller.error(tooLarge);
        },
        flush: () => clearTimeout(timer),
      }),
      { signal: abort.signal },
    );
    // Aborted by the transport (its client closed) or by us: either way the timer goes.
    signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
    return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
