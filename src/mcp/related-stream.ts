import type { JSONRPCNotification } from '@modelcontextprotocol/server';
import type { Response } from 'express';
import type { JsonRpcAnswer, RelatedSink } from './shared-server-transport';

const EVENT_STREAM = /(^|,)\s*text\/event-stream\s*(;|,|$)/i;

interface WithMeta {
  readonly params?: { readonly _meta?: Readonly<Record<string, unknown>> } & Readonly<Record<string, unknown>>;
}

function progressTokenOf(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  return (body as WithMeta).params?._meta?.progressToken;
}

/**
 * The body the MCP layer sees: the caller's, except that a request asking
 * for progress (`_meta.progressToken`) from a caller whose Accept does not
 * name text/event-stream loses the token. Progress can only come on a
 * stream, so such a caller is not asked for any and gets its answer as JSON
 * (the SDK's own entry would otherwise upgrade the answer to a stream the
 * caller said it does not read).
 */
export function progressIfStreamed(body: unknown, accept: string | undefined): unknown {
  if (progressTokenOf(body) === undefined || EVENT_STREAM.test(accept ?? '')) return body;
  const request = body as WithMeta;
  const { progressToken: _dropped, ...meta } = request.params?._meta ?? {};
  return { ...request, params: { ...request.params, _meta: meta } };
}

/**
 * The one stream a stateless server may write to: the response of the POST
 * that carried a request. An answer stays plain JSON unless a handler sends
 * a notification about its request first (a forwarded tools/call relaying
 * the upstream's progress or log messages, ADR 0038); then the response
 * becomes a Streamable HTTP SSE stream: those notifications as they come,
 * the answer last, closed.
 */
export class RelatedStream {
  private opened = false;

  private constructor(private readonly res: Response) {}

  /** The stream for a POST whose body (after progressIfStreamed) is one request asking for progress; undefined for any other. */
  static for(res: Response, body: unknown): RelatedStream | undefined {
    return progressTokenOf(body) === undefined ? undefined : new RelatedStream(res);
  }

  readonly sink: RelatedSink = (notification: JSONRPCNotification) => {
    if (this.res.destroyed) return;
    if (!this.opened) {
      this.opened = true;
      this.res.statusCode = 200;
      this.res.setHeader('Content-Type', 'text/event-stream');
      this.res.setHeader('Cache-Control', 'no-cache');
      this.res.flushHeaders();
    }
    this.res.write(event(notification));
  };

  /** Whether the response became a stream; if so, `answer` is its last event and it is closed. */
  finish(answer: JsonRpcAnswer): boolean {
    if (!this.opened) return false;
    this.res.end(event(answer));
    return true;
  }
}

function event(message: JSONRPCNotification | JsonRpcAnswer): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
