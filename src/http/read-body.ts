import type { IncomingMessage } from 'node:http';

export interface BodyReadLimits {
  /** The most bytes read; one more and the read stops (`config.http.maxBodyBytes`). */
  readonly maxBodyBytes: number;
  /** The longest gap between two chunks of the body. */
  readonly idleTimeoutMs: number;
  /** The longest the whole body may take to arrive, from the first read. */
  readonly totalTimeoutMs: number;
}

export type BodyRead =
  | { readonly ok: true; readonly bytes: Buffer }
  | { readonly ok: false; readonly problem: 'too_large'; readonly maxBodyBytes: number }
  | { readonly ok: false; readonly problem: 'idle_timeout'; readonly idleTimeoutMs: number }
  | { readonly ok: false; readonly problem: 'total_timeout'; readonly totalTimeoutMs: number }
  | { readonly ok: false; readonly problem: 'aborted' };

/**
 * Reads a request body into memory, bounded in bytes and in time. Unlike
 * body-parser, which on an oversized body keeps reading (and discarding) the
 * rest before it answers, this stops the moment the count passes the limit:
 * the stream is paused and left unread, and the caller answers with
 * `Connection: close` so nothing more is taken off the wire. A body that
 * stops arriving is given up on after `idleTimeoutMs` of silence or
 * `totalTimeoutMs` in all, whichever comes first, so a trickling client holds
 * a request for seconds, not for the server's request timeout.
 *
 * Never rejects: every outcome is a value for the adapter to translate.
 */
export function readBoundedBody(req: IncomingMessage, limits: BodyReadLimits): Promise<BodyRead> {
  return new Promise<BodyRead>((resolve) => new BoundedRead(req, limits, resolve).start());
}

/**
 * The whole body, taken synchronously, when every byte Content-Length
 * declares is already buffered in `req` (the usual small request: it came in
 * the head's packet): no listeners, timers or promise for a read that cannot
 * wait or trickle. Undefined when the body is not all here, is chunked, is
 * over `maxBodyBytes`, or is already being read some other way;
 * readBoundedBody then reads it. `req.complete` is no test: Node sets it a
 * turn of the event loop after the bytes are buffered.
 */
export function takeBufferedBody(req: IncomingMessage, maxBodyBytes: number): Buffer | undefined {
  const declared = req.headers['content-length'];
  if (declared === undefined || req.headers['transfer-encoding'] !== undefined || req.readableFlowing !== null || req.readableEnded) return undefined;
  const lengthBytes = Number(declared);
  if (!(lengthBytes <= maxBodyBytes) || req.readableLength !== lengthBytes) return undefined;
  const bytes = lengthBytes === 0 ? Buffer.alloc(0) : (req.read(lengthBytes) as Buffer | null);
  // Not handed over after all (nothing was taken): the bounded read has it all still.
  if (bytes === null) return undefined;
  // Nothing is left to read: let the stream run to its end on its own, as a body read by listeners does.
  req.resume();
  return bytes;
}

/**
 * One read's state. Its listeners are bound methods, not named closures:
 * under tsx (what `npm start` runs) every named closure built per request
 * also costs a `defineProperty` for its name.
 */
class BoundedRead {
  private readonly chunks: Buffer[] = [];
  private receivedBytes = 0;
  private settled = false;
  private idleTimer?: NodeJS.Timeout;
  private totalTimer?: NodeJS.Timeout;
  private readonly onData = this.data.bind(this);
  private readonly onEnd = this.end.bind(this);
  private readonly onAborted = this.aborted.bind(this);
  private readonly onClose = this.close.bind(this);

  constructor(
    private readonly req: IncomingMessage,
    private readonly limits: BodyReadLimits,
    private readonly resolve: (result: BodyRead) => void,
  ) {}

  start(): void {
    const { req } = this;
    if (req.readableEnded) {
      // Nothing left to read (a body-less request that already ended).
      this.end();
      return;
    }
    req.on('data', this.onData);
    req.on('end', this.onEnd);
    req.on('error', this.onAborted);
    req.on('close', this.onClose);
    // The whole body already parsed into memory (a small body in the head's packet): nothing can keep it waiting.
    if (req.complete) return;
    this.totalTimer = setTimeout(() => this.settle({ ok: false, problem: 'total_timeout', totalTimeoutMs: this.limits.totalTimeoutMs }), this.limits.totalTimeoutMs);
    this.armIdle();
  }

  private settle(result: BodyRead): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.idleTimer);
    clearTimeout(this.totalTimer);
    const { req } = this;
    req.off('data', this.onData);
    req.off('end', this.onEnd);
    req.off('error', this.onAborted);
    req.off('close', this.onClose);
    // Whatever is still in flight stays unread; the answer closes the connection.
    if (!result.ok) req.pause();
    this.resolve(result);
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.settle({ ok: false, problem: 'idle_timeout', idleTimeoutMs: this.limits.idleTimeoutMs }), this.limits.idleTimeoutMs);
  }

  private data(chunk: Buffer): void {
    this.receivedBytes += chunk.length;
    if (this.receivedBytes > this.limits.maxBodyBytes) {
      this.settle({ ok: false, problem: 'too_large', maxBodyBytes: this.limits.maxBodyBytes });
      return;
    }
    this.chunks.push(chunk);
    if (this.totalTimer !== undefined) this.armIdle();
  }

  private end(): void {
    const { chunks } = this;
    this.settle({ ok: true, bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.receivedBytes) });
  }

  private aborted(): void {
    this.settle({ ok: false, problem: 'aborted' });
  }

  private close(): void {
    if (!this.req.complete) this.aborted();
  }
}
