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
  return new Promise<BodyRead>((resolve) => {
    const chunks: Buffer[] = [];
    let receivedBytes = 0;
    let settled = false;
    const timers: { idle?: NodeJS.Timeout; total?: NodeJS.Timeout } = {};

    const settle = (result: BodyRead): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timers.idle);
      clearTimeout(timers.total);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAborted);
      req.off('close', onClose);
      // Whatever is still in flight stays unread; the answer closes the connection.
      if (!result.ok) req.pause();
      resolve(result);
    };
    const armIdle = (): void => {
      clearTimeout(timers.idle);
      timers.idle = setTimeout(() => settle({ ok: false, problem: 'idle_timeout', idleTimeoutMs: limits.idleTimeoutMs }), limits.idleTimeoutMs);
    };
    const onData = (chunk: Buffer): void => {
      receivedBytes += chunk.length;
      if (receivedBytes > limits.maxBodyBytes) {
        settle({ ok: false, problem: 'too_large', maxBodyBytes: limits.maxBodyBytes });
        return;
      }
      chunks.push(chunk);
      if (timers.total !== undefined) armIdle();
    };
    const onEnd = (): void => settle({ ok: true, bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, receivedBytes) });
    const onAborted = (): void => settle({ ok: false, problem: 'aborted' });
    const onClose = (): void => {
      if (!req.complete) onAborted();
    };
    if (req.readableEnded) {
      // Nothing left to read (a body-less request that already ended).
      onEnd();
      return;
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAborted);
    req.on('close', onClose);
    // The whole body already parsed into memory (a small body in the head's packet): nothing can keep it waiting.
    if (req.complete) return;
    timers.total = setTimeout(() => settle({ ok: false, problem: 'total_timeout', totalTimeoutMs: limits.totalTimeoutMs }), limits.totalTimeoutMs);
    armIdle();
  });
}
