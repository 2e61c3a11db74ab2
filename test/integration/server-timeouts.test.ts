import { once } from 'node:events';
import http, { type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { applyServerTimeouts, type ServerTimeouts } from '../../src/service/server-timeouts';

/**
 * Real listening servers and raw sockets, with deadlines in the hundreds of
 * milliseconds. Node checks them every `connectionsCheckingInterval`, set
 * short here (it is fixed at createServer) so no test waits long.
 */
const SHORT: ServerTimeouts = { headersTimeoutMs: 200, requestTimeoutMs: 400, keepAliveTimeoutMs: 150, maxConnections: 0 };

/** Answers once the whole body has arrived, as a body parser would. */
function waitsForTheBody(req: http.IncomingMessage, res: http.ServerResponse): void {
  req.resume();
  req.on('end', () => res.end('ok'));
}

async function listen(timeouts: ServerTimeouts | undefined): Promise<{ server: Server; port: number }> {
  const server = http.createServer({ connectionsCheckingInterval: 25 }, waitsForTheBody);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  if (timeouts !== undefined) applyServerTimeouts(server, timeouts);
  return { server, port: (server.address() as AddressInfo).port };
}

/** Connects and resolves with what the server sent and how long until it closed the connection (or gave up after `capMs`). */
function exchange(port: number, send: (socket: net.Socket) => void, capMs = 3_000): Promise<{ received: string; closedAfterMs: number; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const startedMs = performance.now();
    const socket = net.connect(port, '127.0.0.1', () => send(socket));
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    const cap = setTimeout(() => {
      socket.destroy();
      resolve({ received, closedAfterMs: performance.now() - startedMs, closedByServer: false });
    }, capMs);
    socket.on('close', () => {
      clearTimeout(cap);
      resolve({ received, closedAfterMs: performance.now() - startedMs, closedByServer: true });
    });
  });
}

let servers: Server[] = [];
afterEach(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  servers = [];
});
async function started(timeouts: ServerTimeouts | undefined) {
  const { server, port } = await listen(timeouts);
  servers.push(server);
  return port;
}

test('headers sent slowly are cut off with 408 after headersTimeoutMs', async () => {
  const port = await started(SHORT);
  const result = await exchange(port, (socket) => socket.write('POST / HTTP/1.1\r\nHost: x\r\n'));
  expect(result.closedByServer).toBe(true);
  expect(result.received).toMatch(/^HTTP\/1\.1 408/);
  expect(result.closedAfterMs).toBeLessThan(1_000);
});

test('a body that never completes (Content-Length: 50000000) is cut off after requestTimeoutMs, not held for minutes', async () => {
  const port = await started(SHORT);
  const result = await exchange(port, (socket) => {
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n');
    socket.write('x'.repeat(1000));
  });
  expect(result.closedByServer).toBe(true);
  expect(result.closedAfterMs).toBeGreaterThanOrEqual(SHORT.requestTimeoutMs - 50);
  expect(result.closedAfterMs).toBeLessThan(1_500);
});

test('without applyServerTimeouts the same body is still held when the test gives up (the attack this closes)', async () => {
  const port = await started(undefined);
  const result = await exchange(port, (socket) => socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n'), 1_000);
  expect(result.closedByServer).toBe(false);
});

test('an idle keep-alive connection is closed after keepAliveTimeoutMs', async () => {
  const port = await started(SHORT);
  const result = await exchange(port, (socket) => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
  expect(result.received).toMatch(/^HTTP\/1\.1 200/);
  expect(result.closedByServer).toBe(true);
  // Node 20 keeps the socket open keepAliveTimeout plus its own 1 s buffer against racing a client's reuse.
  expect(result.closedAfterMs).toBeGreaterThanOrEqual(SHORT.keepAliveTimeoutMs);
  expect(result.closedAfterMs).toBeLessThan(SHORT.keepAliveTimeoutMs + 1_800);
});

test('maxConnections caps open connections; 0 means no cap', async () => {
  const capped = await started({ ...SHORT, requestTimeoutMs: 10_000, headersTimeoutMs: 10_000, maxConnections: 1 });
  const holder = net.connect(capped, '127.0.0.1');
  await once(holder, 'connect');
  await new Promise((resolve) => setTimeout(resolve, 50));
  const refused = await exchange(capped, (socket) => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), 1_000);
  holder.destroy();
  expect(refused.closedByServer).toBe(true);
  expect(refused.received).toBe('');

  const uncapped = await started(SHORT);
  const server = servers[servers.length - 1] as Server;
  expect(server.maxConnections).not.toBe(0);
  const served = await exchange(uncapped, (socket) => socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
  expect(served.received).toMatch(/^HTTP\/1\.1 200/);
});

test.each([
  ['a negative figure', { ...SHORT, headersTimeoutMs: -1 }, 'headersTimeoutMs must be a non-negative whole number, got -1'],
  ['a fractional figure', { ...SHORT, keepAliveTimeoutMs: 1.5 }, 'keepAliveTimeoutMs must be a non-negative whole number, got 1.5'],
  ['headers allowed longer than the request', { ...SHORT, headersTimeoutMs: 500, requestTimeoutMs: 400 }, 'headersTimeoutMs (500) must not exceed requestTimeoutMs (400)'],
])('refuses figures Node would misuse: %s', (_label, timeouts, message) => {
  expect(() => applyServerTimeouts(http.createServer(), timeouts)).toThrow(new RangeError(message));
});
