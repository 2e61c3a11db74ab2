import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { readBoundedBody, takeBufferedBody } from '../../src/http/read-body';

/**
 * A real node:http server whose handler waits one tick (as the /mcp chain
 * does before the body step) and hands the request to `inspect`; the raw
 * request is written on a plain socket, so a test decides what has arrived.
 * Each piece after the first is written only once `inspect` calls `proceed`,
 * so a slow machine cannot let two pieces arrive together.
 */
async function withRequest(raw: string[], inspect: (req: IncomingMessage, proceed: () => void) => Promise<void> | void): Promise<void> {
  let failure: unknown;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  let proceed!: () => void;
  const proceeding = new Promise<void>((resolve) => (proceed = resolve));
  const server: Server = createServer((req, res) => {
    process.nextTick(() => {
      Promise.resolve()
        .then(() => inspect(req, proceed))
        .catch((error: unknown) => (failure = error))
        .finally(() => {
          proceed();
          res.end('ok');
          done();
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  socket.on('error', () => undefined);
  for (const [i, piece] of raw.entries()) {
    if (i > 0) await proceeding;
    socket.write(piece);
  }
  await finished;
  socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (failure !== undefined) throw failure;
}

const head = (length: number): string => `POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
const BODY = '{"jsonrpc":"2.0","id":1,"method":"ping"}';

describe('takeBufferedBody', () => {
  test('hands over a small body that came with the head, byte for byte, without a read', async () => {
    await withRequest([head(BODY.length) + BODY], (req) => {
      expect(takeBufferedBody(req, 1024)?.toString('utf8')).toBe(BODY);
    });
  });

  test('hands over an empty body as an empty buffer', async () => {
    await withRequest([head(0)], (req) => {
      expect(takeBufferedBody(req, 1024)).toEqual(Buffer.alloc(0));
    });
  });

  test('leaves a body still arriving to the bounded read, which gets all of it', async () => {
    await withRequest([head(BODY.length) + BODY.slice(0, 10), BODY.slice(10)], async (req, proceed) => {
      expect(takeBufferedBody(req, 1024)).toBeUndefined();
      // Only now is the rest of the body sent.
      proceed();
      const read = await readBoundedBody(req, { maxBodyBytes: 1024, idleTimeoutMs: 5_000, totalTimeoutMs: 5_000 });
      expect(read.ok && read.bytes.toString('utf8')).toBe(BODY);
    });
  });

  test('leaves a buffered body over the limit to the bounded read, which refuses it as too large', async () => {
    await withRequest([head(BODY.length) + BODY], async (req) => {
      expect(takeBufferedBody(req, BODY.length - 1)).toBeUndefined();
      const read = await readBoundedBody(req, { maxBodyBytes: BODY.length - 1, idleTimeoutMs: 5_000, totalTimeoutMs: 5_000 });
      expect(read).toEqual({ ok: false, problem: 'too_large', maxBodyBytes: BODY.length - 1 });
    });
  });

  test('takes a body exactly at the limit', async () => {
    await withRequest([head(BODY.length) + BODY], (req) => {
      expect(takeBufferedBody(req, BODY.length)?.length).toBe(BODY.length);
    });
  });

  test('lets the request stream run to its end after taking the body', async () => {
    await withRequest([head(BODY.length) + BODY], async (req) => {
      const ended = new Promise<void>((resolve) => req.once('end', resolve));
      expect(takeBufferedBody(req, 1024)?.length).toBe(BODY.length);
      await ended;
      expect(req.complete).toBe(true);
    });
  });

  test('leaves a chunked body to the bounded read', async () => {
    const chunked = `POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n`;
    await withRequest([chunked], async (req) => {
      expect(takeBufferedBody(req, 1024)).toBeUndefined();
      const read = await readBoundedBody(req, { maxBodyBytes: 1024, idleTimeoutMs: 5_000, totalTimeoutMs: 5_000 });
      expect(read.ok && read.bytes.toString('utf8')).toBe(BODY);
    });
  });

  test('leaves alone a body something else already reads (flowing or paused)', async () => {
    await withRequest([head(BODY.length) + BODY], (req) => {
      req.pause();
      expect(takeBufferedBody(req, 1024)).toBeUndefined();
      req.resume();
    });
  });
});
