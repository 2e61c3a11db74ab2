import type { IncomingMessage, ServerResponse } from 'node:http';

export interface LingerLimits {
  /** The longest the connection stays open after the answer, discarding what the client still sends. */
  readonly lingerMs: number;
  /** The most bytes discarded while lingering; past it the connection is cut at once. */
  readonly maxDiscardBytes: number;
}

/**
 * Half a second and 1 MiB: long enough for a client on loopback or a cloud
 * network to read the answer and stop sending, short and small enough that a
 * client who never stops costs a bounded, parse-free read.
 */
export const LINGER_DEFAULTS: LingerLimits = { lingerMs: 500, maxDiscardBytes: 1_048_576 };

/**
 * Marks a response as the connection's last and closes the connection after
 * it the way RFC 9112 §9.6 asks ("lingering close"): send the answer and a
 * FIN, then keep discarding what the client is still sending, for a bounded
 * time and byte count, before closing. Closing at once with the client's
 * bytes still unread makes the kernel answer with a RST, which can wipe the
 * answer from the client's buffer before it is read: a client streaming an
 * oversized body would see ECONNRESET instead of our 413.
 *
 * Nothing is buffered or parsed while lingering; call before the response is
 * written.
 */
export function closeAfterResponse(req: IncomingMessage, res: ServerResponse, limits: LingerLimits = LINGER_DEFAULTS): void {
  res.setHeader('Connection', 'close');
  const socket = req.socket;
  // Node ends and then destroys a `Connection: close` socket once the answer is written;
  // keep the end (our FIN) and leave the destroy to the linger below.
  socket.destroySoon = function endOnly(this: typeof socket): void {
    this.end();
  };
  res.once('finish', () => {
    let discardedBytes = 0;
    const cut = (): void => {
      clearTimeout(timer);
      socket.destroy();
    };
    const timer = setTimeout(cut, limits.lingerMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    req.removeAllListeners('data');
    req.on('data', (chunk: Buffer) => {
      discardedBytes += chunk.length;
      if (discardedBytes > limits.maxDiscardBytes) cut();
    });
    req.resume();
  });
}
