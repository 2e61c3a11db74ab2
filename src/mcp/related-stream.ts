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
 * What a relayed stream may hold unread (docs/adr/0051-gateway-degrade-and-bounds.md). Past
 * `backpressureBytes` unsent, a progress report replaces the one waiting (only the latest matters) and a log message
 * is dropped; a stream that stays that full for `stallMs`, or would hold more than `callBytes`, or would take the
 * instance's streams past `instanceBytes`, is cut: the connection is closed, which cancels the call upstream, so a
 * client that never reads costs one bounded buffer, not memory until the timeout.
 */
export interface RelayBounds {
  /** Default 64 KiB. */
  readonly backpressureBytes: number;
  /** Default 1 MiB. */
  readonly callBytes: number;
  /** Default 32 MiB, every relayed stream of the process together. */
  readonly instanceBytes: number;
  /** Default 10000. */
  readonly stallMs: number;
}

export const DEFAULT_RELAY_BOUNDS: RelayBounds = { backpressureBytes: 64 * 1024, callBytes: 1024 * 1024, instanceBytes: 32 * 1024 * 1024, stallMs: 10_000 };

/** Bytes written to relayed streams and not yet taken by their sockets, every stream of the process together. */
let unreadOnInstance = 0;

/** For tests and /metrics: what the instance's relayed streams hold unread now. */
export function relayedUnreadBytes(): number {
  return unreadOnInstance;
}

/**
 * The one stream a stateless server may write to: the response of the POST
 * that carried a request. An answer stays plain JSON unless a handler sends
 * a notification about its request first (a forwarded tools/call relaying
 * the upstream's progress or log messages, ADR 0038); then the response
 * becomes a Streamable HTTP SSE stream: those notifications as they come,
 * the answer last, closed. What it holds unread is bounded (RelayBounds).
 */
export class RelatedStream {
  private opened = false;
  private cut = false;
  /** This stream's share of unreadOnInstance. */
  private accounted = 0;
  /** The latest progress report held back while the socket is full. */
  private pendingProgress: string | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  /** Log messages dropped while the socket was full. */
  dropped = 0;

  private constructor(
    private readonly res: Response,
    private readonly bounds: RelayBounds,
    private readonly onCut: (why: string) => void,
  ) {}

  /** The stream for a POST whose body (after progressIfStreamed) is one request asking for progress; undefined for any other. */
  static for(res: Response, body: unknown, bounds: RelayBounds = DEFAULT_RELAY_BOUNDS, onCut: (why: string) => void = () => undefined): RelatedStream | undefined {
    return progressTokenOf(body) === undefined ? undefined : new RelatedStream(res, bounds, onCut);
  }

  readonly sink: RelatedSink = (notification: JSONRPCNotification) => {
    if (this.res.destroyed || this.cut) return;
    if (!this.opened) this.open();
    const chunk = event(notification);
    if (this.res.writableLength >= this.bounds.backpressureBytes) {
      // Backpressure: the caller is not reading as fast as the upstream reports.
      if (notification.method === 'notifications/progress') this.pendingProgress = chunk;
      else this.dropped += 1;
      this.armStall();
      return;
    }
    this.write(chunk);
  };

  /** Whether the response became a stream; if so, `answer` is its last event and it is closed. */
  finish(answer: JsonRpcAnswer): boolean {
    if (!this.opened) return false;
    if (this.cut || this.res.destroyed) return true;
    this.pendingProgress = undefined;
    clearTimeout(this.stallTimer);
    this.res.end(event(answer));
    this.account();
    return true;
  }

  private open(): void {
    this.opened = true;
    this.res.statusCode = 200;
    this.res.setHeader('Content-Type', 'text/event-stream');
    this.res.setHeader('Cache-Control', 'no-cache');
    this.res.flushHeaders();
    this.res.on('drain', this.drained);
    this.res.on('close', () => {
      clearTimeout(this.stallTimer);
      unreadOnInstance -= this.accounted;
      this.accounted = 0;
    });
  }

  private write(chunk: string): void {
    const bytes = Buffer.byteLength(chunk);
    if (this.res.writableLength + bytes > this.bounds.callBytes) return this.cutOff('the caller did not read its stream (per-call bound)');
    if (unreadOnInstance + bytes > this.bounds.instanceBytes) return this.cutOff('relayed streams hold too much unread on this instance (per-instance bound)');
    this.res.write(chunk);
    this.account();
  }

  private readonly drained = (): void => {
    this.account();
    clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
    const pending = this.pendingProgress;
    this.pendingProgress = undefined;
    if (pending !== undefined && !this.cut) this.write(pending);
  };

  private armStall(): void {
    if (this.stallTimer !== undefined) return;
    this.stallTimer = setTimeout(() => this.cutOff(`the caller did not read its stream for ${this.bounds.stallMs} ms`), this.bounds.stallMs);
    this.stallTimer.unref();
  }

  /** A refusal, not a hang: the connection closes (the call upstream is cancelled with it) and the log says why. */
  private cutOff(why: string): void {
    if (this.cut) return;
    this.cut = true;
    this.pendingProgress = undefined;
    clearTimeout(this.stallTimer);
    this.onCut(why);
    this.res.destroy();
  }

  /** Keeps unreadOnInstance equal to what the streams hold: the socket takes bytes as the caller reads. */
  private account(): void {
    const now = this.res.destroyed ? 0 : this.res.writableLength;
    unreadOnInstance += now - this.accounted;
    this.accounted = now;
  }
}

/**
 * The 2026-07-28 path: the SDK's own entry answers with a web stream of SSE
 * events (its notifications, then the answer), passed on here as it comes,
 * under the same bounds as RelatedStream, except that the chunks are the
 * SDK's (no progress to coalesce) and the answer rides in them: a stream is
 * cut when it would hold more than `callBytes` plus `answerBytes` unread, or
 * stays past `backpressureBytes` unread for `stallMs`, or would take the
 * instance past `instanceBytes`. Cut: the reader is cancelled and the
 * connection destroyed (cancelling the call). Resolves when done either way.
 */
export async function pipeBoundedStream(
  res: Response,
  body: AsyncIterable<Uint8Array>,
  answerBytes: number,
  bounds: RelayBounds = DEFAULT_RELAY_BOUNDS,
  onCut: (why: string) => void = () => undefined,
): Promise<void> {
  let accounted = 0;
  const account = (): void => {
    const now = res.destroyed ? 0 : res.writableLength;
    unreadOnInstance += now - accounted;
    accounted = now;
  };
  let stallTimer: NodeJS.Timeout | undefined;
  let cutWhy: string | undefined;
  const cut = (why: string): void => {
    if (cutWhy !== undefined) return;
    cutWhy = why;
    clearTimeout(stallTimer);
    onCut(why);
    res.destroy();
  };
  const drained = (): void => {
    account();
    clearTimeout(stallTimer);
    stallTimer = undefined;
  };
  res.on('drain', drained);
  try {
    for await (const chunk of body) {
      if (res.destroyed || cutWhy !== undefined) break;
      if (res.writableLength + chunk.byteLength > bounds.callBytes + answerBytes) {
        cut('the caller did not read its stream (per-call bound)');
        break;
      }
      if (unreadOnInstance + chunk.byteLength > bounds.instanceBytes) {
        cut('relayed streams hold too much unread on this instance (per-instance bound)');
        break;
      }
      res.write(chunk);
      account();
      if (res.writableLength >= bounds.backpressureBytes && stallTimer === undefined) {
        stallTimer = setTimeout(() => cut(`the caller did not read its stream for ${bounds.stallMs} ms`), bounds.stallMs);
        stallTimer.unref();
      }
    }
    if (!res.destroyed) res.end();
  } finally {
    clearTimeout(stallTimer);
    res.off('drain', drained);
    // What the socket still holds is given back when it closes (or now, if it already has).
    if (res.destroyed) {
      unreadOnInstance -= accounted;
      accounted = 0;
    } else {
      res.once('close', () => {
        unreadOnInstance -= accounted;
        accounted = 0;
      });
      res.once('finish', account);
    }
  }
}

function event(message: JSONRPCNotification | JsonRpcAnswer): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
