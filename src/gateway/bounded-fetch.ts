import { UpstreamError } from './upstream-error';

export interface AnswerBounds {
  /** How long one request and the reading of its answer may take, from the moment it is sent. */
  readonly deadlineMs: number;
}

/**
 * `base` with every request that carries a message (a POST, a DELETE) bound
 * by `deadlineMs`: past it, the request is aborted, which closes its socket.
 * The SDK's own request timeout only stops waiting (a 2025-era client leaves
 * the response stream open). A GET is the session's standalone stream, open
 * by design for as long as the session lasts: not bound.
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
    const watched = response.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: () => clearTimeout(timer) }), { signal: abort.signal });
    // Aborted by the transport (its client closed) or by the deadline: either way the timer goes.
    signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
    return new Response(watched, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** Statuses whose Response cannot carry a body (the constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);
