import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

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

const closing = new WeakSet<ServerResponse>();

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
  if (closing.has(res)) return;
  closing.add(res);
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

/**
 * A refusal written before the body has fully arrived (auth's 401/403/429,
 * a 403 from Host validation) ends the connection instead of letting Node
 * drain the rest of the body to keep it alive: an unauthenticated client
 * must not make us read its megabyte. A body that has already arrived whole
 * (the usual small request) is left alone and the connection stays up.
 * Mounted before the refusing middleware; it only watches the moment the
 * response head is written.
 */
export function createUnreadBodyGuard(limits: LingerLimits): RequestHandler {
  return function unreadBodyGuard(req: Request, res: Response, next: NextFunction): void {
    // Node emits the request from inside the parser, before it parses the rest of the same packet: one tick
    // lets a small body that came with the head reach req's buffer before a synchronous refusal looks at it.
    process.nextTick(() => {
      // Already all here (the common case: a small body in the head's packet): it stays here, or we read it, so no guard.
      if (!bodyArrived(req)) guardWriteHead(req, res, limits);
      next();
    });
  };
}

function guardWriteHead(req: Request, res: Response, limits: LingerLimits): void {
  const writeHead = res.writeHead;
  res.writeHead = function guardedWriteHead(this: Response, ...args: Parameters<typeof writeHead>) {
    // Still arriving and not being read by us: whatever follows would only be drained.
    if (!bodyArrived(req) && !bodyReadStarted(req)) closeAfterResponse(req, res, limits);
    return writeHead.apply(this, args);
  } as typeof writeHead;
}

/**
 * A mark on the request itself, not a WeakSet of requests: a WeakSet entry per
 * request is an allocation and an ephemeron for the collector on every call.
 */
const BODY_READ = Symbol('bodyRead');
type MarkedRequest = IncomingMessage & { [BODY_READ]?: true };

/** Called by the body reader: from here on a refusal is the reader's to close. */
export function markBodyRead(req: IncomingMessage): void {
  (req as MarkedRequest)[BODY_READ] = true;
}

/**
 * Whether the whole body is already here. `req.complete` alone is not enough:
 * it is set only once the message is consumed, so a small body that came in
 * the same packet as the head sits buffered in `req` with complete still false.
 */
function bodyArrived(req: IncomingMessage): boolean {
  if (req.complete) return true;
  const declared = req.headers['content-length'];
  if (declared === undefined) return req.headers['transfer-encoding'] === undefined;
  return req.readableLength >= Number(declared);
}

function bodyReadStarted(req: IncomingMessage): boolean {
  return (req as MarkedRequest)[BODY_READ] === true;
}
