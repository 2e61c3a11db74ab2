import net from 'node:net';

/**
 * The floor a Redis client can reach from Node: one `node:net` socket, each
 * command written as a RESP2 array of bulk strings, each reply parsed to a
 * plain value and handed to the oldest waiting caller. No queue bound, no
 * timeouts, no reconnects, no tracing: what is left is the round trip, the
 * syscalls and the minimum of encoding and decoding, so a real client's
 * cost above it is the client's own. Bench only.
 */

/** A RESP2 reply: simple/bulk string, integer, null, or an array of replies; an error reply rejects. */
export type RawReply = string | number | null | RawReply[];

interface Waiter {
  readonly resolve: (reply: RawReply) => void;
  readonly reject: (error: Error) => void;
}

/** One parsed value and where it ended, or undefined when the buffer does not hold it whole yet. */
type Parsed = { readonly value: RawReply | Error; readonly end: number } | undefined;

const CRLF = 0x0d;

function lineEnd(buffer: Buffer, from: number): number {
  const at = buffer.indexOf(CRLF, from);
  return at === -1 || at + 1 >= buffer.length ? -1 : at;
}

function parse(buffer: Buffer, at: number): Parsed {
  if (at >= buffer.length) return undefined;
  const end = lineEnd(buffer, at + 1);
  if (end === -1) return undefined;
  const type = buffer[at];
  const line = buffer.toString('latin1', at + 1, end);
  const next = end + 2;
  switch (type) {
    case 0x2b: // '+'
      return { value: line, end: next };
    case 0x2d: // '-'
      return { value: new Error(line), end: next };
    case 0x3a: // ':'
      return { value: Number(line), end: next };
    case 0x24: { // '$'
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (next + length + 2 > buffer.length) return undefined;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case 0x2a: { // '*'
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: RawReply[] = [];
      let cursor = next;
      for (let i = 0; i < count; i++) {
        const item = parse(buffer, cursor);
        if (item === undefined) return undefined;
        // An error inside an array (a MULTI's) is not what the bench sends; keep it as its message.
        items.push(item.value instanceof Error ? item.value.message : item.value);
        cursor = item.end;
      }
      return { value: items, end: cursor };
    }
    default:
      throw new Error(`raw redis client: unexpected reply type byte ${String(type)}`);
  }
}

function encode(args: readonly string[]): string {
  let out = `*${args.length}\r\n`;
  for (const arg of args) out += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  return out;
}

export class RawRedisClient {
  private readonly waiting: Waiter[] = [];
  private head = 0;
  private pending: Buffer = Buffer.alloc(0);
  private corked = false;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.failAll(error));
    socket.on('close', () => this.failAll(new Error('raw redis client: connection closed')));
  }

  static connect(port: number, host = '127.0.0.1'): Promise<RawRedisClient> {
    return new Promise((resolve, reject) => {
      const socket = net.createConnection({ port, host, noDelay: true });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawRedisClient(socket));
      });
    });
  }

  /**
   * Writes one command. Commands sent in the same tick leave in one write
   * (cork until the next tick), as node-redis batches its writes, so the
   * in-flight rows compare like with like.
   */
  send(args: readonly string[]): Promise<RawReply> {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(encode(args));
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let at = 0;
    for (;;) {
      const parsed = parse(this.pending, at);
      if (parsed === undefined) break;
      at = parsed.end;
      const waiter = this.waiting[this.head++];
      if (waiter === undefined) throw new Error('raw redis client: a reply nobody asked for');
      if (parsed.value instanceof Error) waiter.reject(parsed.value);
      else waiter.resolve(parsed.value);
    }
    this.pending = at === this.pending.length ? Buffer.alloc(0) : this.pending.subarray(at);
    // Drop the answered waiters now and then, not one shift() per reply.
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
  }

  private failAll(error: Error): void {
    for (let i = this.head; i < this.waiting.length; i++) this.waiting[i]?.reject(error);
    this.waiting.length = 0;
    this.head = 0;
  }
}
