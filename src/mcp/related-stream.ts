import type { JSONRPCNotification } from '@modelcontextprotocol/server';
import type { Response } from 'express';
import type { JsonRpcAnswer, RelatedSink } from './shared-server-transport';

/**
 * The one stream a stateless server may write to: the response of the POST
 * that carried a request. An answer stays plain JSON unless a handler sends
 * a notification about its request first (a forwarded tools/call relaying
 * the upstream's progress or log messages, ADR 0038); then the response
 * becomes a Streamable HTTP SSE stream: those notifications as they come,
 * the answer last, closed. A caller whose Accept did not list
 * text/event-stream never gets one: its notifications are dropped and its
 * answer is JSON, as before.
 */
export class RelatedStream {
  private opened = false;

  private constructor(
    private readonly res: Response,
    private readonly acceptsStream: boolean,
  ) {}

  static for(res: Response, accept: string | undefined): RelatedStream {
    return new RelatedStream(res, /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept ?? ''));
  }

  readonly sink: RelatedSink = (notification: JSONRPCNotification) => {
    if (!this.acceptsStream || this.res.destroyed) return;
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
