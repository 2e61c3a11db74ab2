import type { JSONRPCNotification } from '@modelcontextprotocol/server';
import type { Response } from 'express';
import type { JsonRpcAnswer, RelatedSink } from './shared-server-transport';

const EVENT_STREAM = /(^|,)\s*text\/event-stream\s*(;|,|$)/i;

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

  /**
   * The stream for a POST whose body is one request asking for progress
   * (`_meta.progressToken`) from a caller whose Accept lists
   * text/event-stream; undefined for anything else, whose handlers'
   * notifications are then dropped and whose answer is JSON.
   */
  static for(res: Response, body: unknown, accept: string | undefined): RelatedStream | undefined {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
    const meta = (body as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta;
    if (meta?.progressToken === undefined || !EVENT_STREAM.test(accept ?? '')) return undefined;
    return new RelatedStream(res);
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
