import { once } from 'node:events';
import type { Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Express } from 'express';
import request from 'supertest';
import { buildTestApp, GOOD_SECRET, type TestApp } from '../support/mcp-test-app';

/**
 * The attacks a review reproduced against /mcp, each answered before it costs
 * CPU or a unit of anyone's limit: the order is Host -> Content-Length ->
 * auth -> bounded read -> structure scan -> parse -> shape -> protocol ->
 * cost -> limiter -> MCP.
 */
const NOW_MS = 1_699_999_990_000;
const clock = () => NOW_MS;
const ACCEPT = 'application/json, text/event-stream';
const call = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });
const batchOf = (length: number) => Array.from({ length }, (_, i) => call(i));
const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

/** `secret` null: no Authorization header at all. */
function post(app: Express, body: unknown, secret: string | null = GOOD_SECRET) {
  const req = request(app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json');
  if (secret !== null) req.set('Authorization', `Bearer ${secret}`);
  return req.send(typeof body === 'string' ? body : JSON.stringify(body));
}

/** What the next allowed call sees: how many units the previous requests left. */
async function remainingAfter(app: Express): Promise<number> {
  const res = await post(app, call('probe'));
  expect(res.status).toBe(200);
  return Number(res.headers['x-ratelimit-remaining']);
}

describe('unauthenticated bodies are never read, parsed or validated', () => {
  let app: Express;
  let release: () => Promise<void>;
  beforeAll(async () => ({ app, release } = await buildTestApp({ clock })));
  afterAll(() => release());

  test('1 MB of nested arrays without a token gets 401 (auth), not a parse or a shape check', async () => {
    const res = await post(app, nested(500_000), null);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001 } });
  });

  test('a text/plain body without a token gets 401 too: auth comes before any body check', async () => {
    const res = await request(app).post('/mcp').set('Content-Type', 'text/plain').send('hello');
    expect(res.status).toBe(401);
  });
});

describe('bodies refused before the parser, charged nothing', () => {
  let app: Express;
  let release: () => Promise<void>;
  beforeEach(async () => ({ app, release } = await buildTestApp({ clock })));
  afterEach(() => release());

  test('1 MB of nested arrays with a valid token gets 400 -32600 naming the depth bound, and costs 0 units', async () => {
    const res = await post(app, nested(500_000));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request: JSON nested deeper than 64 levels', data: { reason: 'too_deep', maxDepth: 64 } },
    });
    expect(await remainingAfter(app)).toBe(119);
  });

  test('a 10,000-message batch gets 400 -32600 (the SDK bound of 100) and costs 0 units', async () => {
    const res = await post(app, batchOf(10_000));
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({
      code: -32600,
      message: 'Invalid Request: Batch must not exceed 100 messages',
      data: { reason: 'batch_too_large', maxBatchMessages: 100 },
    });
    // Its headers are the refused-request budget's, not the published limit's.
    expect(res.headers['ratelimit-policy']).toMatch(/^"refused-requests";/);
    expect(await remainingAfter(app)).toBe(119);
  });

  test('a 100-message batch is within the bound and costs 100 units', async () => {
    const res = await post(app, batchOf(100));
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-remaining']).toBe('20');
  });

  test.each([
    ['gzip', { 'Content-Encoding': 'gzip' }, 'unsupported_encoding'],
    ['a latin-1 charset', { 'Content-Type': 'application/json; charset=iso-8859-1' }, 'unsupported_charset'],
    ['text/plain', { 'Content-Type': 'text/plain' }, 'not_json'],
  ])('%s gets 415 with the reason, after auth, charged nothing', async (_label, headers, reason) => {
    const res = await post(app, call(1)).set(headers);
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, data: { reason } } });
    expect(await remainingAfter(app)).toBe(119);
  });

});

describe('MCP transport refusals are made before the limiter, with the SDK codes', () => {
  let app: Express;
  let release: () => Promise<void>;
  beforeEach(async () => ({ app, release } = await buildTestApp({ clock })));
  afterEach(() => release());

  test('an Accept that rules out JSON gets 406 -32000 and costs 0 units', async () => {
    const res = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${GOOD_SECRET}`)
      .set('Content-Type', 'application/json')
      .set('Accept', 'text/event-stream')
      .send(JSON.stringify(call(3)));
    expect(res.status).toBe(406);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32000 } });
    expect(res.headers['ratelimit-policy']).toMatch(/^"refused-requests";/);
    expect(await remainingAfter(app)).toBe(119);
  });

  test.each([
    ['no Accept', undefined],
    ['Accept: application/json alone', 'application/json'],
    ['Accept: */*', '*/*'],
  ])('%s is answered with JSON, since JSON is all this server sends', async (_label, accept) => {
    let req = request(app).post('/mcp').set('Authorization', `Bearer ${GOOD_SECRET}`).set('Content-Type', 'application/json');
    if (accept !== undefined) req = req.set('Accept', accept);
    const res = await req.send(JSON.stringify(call(5)));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 5, result: { structuredContent: { tokenId: 'tok_test1' } } });
    expect(await remainingAfter(app)).toBe(118);
  });

  test('an unsupported MCP-Protocol-Version gets 400 -32000 and costs 0 units', async () => {
    const res = await post(app, call(4)).set('MCP-Protocol-Version', '1999-01-01');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: -32000, message: expect.stringContaining('Unsupported protocol version: 1999-01-01') });
    expect(await remainingAfter(app)).toBe(119);
  });
});

describe('a call that no window can hold', () => {
  let built: TestApp | undefined;
  afterEach(async () => {
    await built?.release();
    built = undefined;
  });

  test('a batch costing more than the limit gets 413 saying so (not 429 retry-after) and costs 0 units', async () => {
    const { app } = (built = await buildTestApp({ clock, env: { RATE_LIMIT_PER_MINUTE: '3' } }));
    const res = await post(app, batchOf(5));
    expect(res.status).toBe(413);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body.error).toEqual({
      code: -32013,
      message: 'This batch costs 5 units; your limit is 3 per 60 s, so it can never be allowed. Split it into batches of at most 3 messages.',
      data: { reason: 'cost_exceeds_limit', cost: 5, limit: 3, windowSeconds: 60, policy: 'default' },
    });
    expect(await remainingAfter(app)).toBe(2);
  });
});

// ------------------------------------------------------------ on a real socket

interface RawExchange {
  readonly socket: net.Socket;
  /** Resolves with everything the server sent, once it has sent a whole response head and body or closed. */
  readonly response: Promise<string>;
}

function openRaw(port: number, head: string): RawExchange {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined); // a reset after the answer is the point of some tests
  socket.write(head);
  let received = '';
  const response = new Promise<string>((resolve) => {
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(received);
      if (end >= 0 && length !== null && received.length >= end + 4 + Number(length[1])) resolve(received);
    });
    socket.on('close', () => resolve(received));
  });
  return { socket, response };
}

function headFor(port: number, headers: Record<string, string>): string {
  const lines = Object.entries({ Host: `localhost:${port}`, Accept: ACCEPT, 'Content-Type': 'application/json', ...headers }).map(([k, v]) => `${k}: ${v}`);
  return `POST /mcp HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
const bodyOf = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { error: { code: number; data?: unknown } };

describe('on a real socket', () => {
  let server: Server;
  let port: number;
  let release: () => Promise<void>;
  beforeAll(async () => {
    // Short read deadlines, so the tests below wait tens of milliseconds, not seconds.
    const built = await buildTestApp({ clock, env: { MAX_BODY_BYTES: '65536' }, bodyTimeouts: { idleTimeoutMs: 150, totalTimeoutMs: 600 } });
    release = built.release;
    server = built.app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await release();
  });

  test('a 50 MB Content-Length gets 413 with Connection: close before a byte of the body is sent', async () => {
    const { socket, response } = openRaw(port, headFor(port, { Authorization: `Bearer ${GOOD_SECRET}`, 'Content-Length': '50000000' }));
    const raw = await response;
    socket.destroy();
    expect(statusOf(raw)).toBe(413);
    expect(raw).toMatch(/\r\nconnection: close\r\n/i);
    expect(bodyOf(raw).error).toEqual({ code: -32013, message: 'Request body is larger than 65536 bytes', data: { maxBodyBytes: 65536 } });
  });

  test('without a token, the 401 comes before the body is sent, and the connection closes rather than drain the body', async () => {
    const { socket, response } = openRaw(port, headFor(port, { 'Content-Length': '60000' }));
    const raw = await response;
    expect(statusOf(raw)).toBe(401);
    expect(raw).toMatch(/\r\nconnection: close\r\n/i);
    await once(socket, 'close');
  });

  test('without a token, a small body that arrived whole keeps the connection alive', async () => {
    const body = JSON.stringify(call(1));
    const { socket, response } = openRaw(port, headFor(port, { 'Content-Length': String(Buffer.byteLength(body)) }) + body);
    const raw = await response;
    socket.destroy();
    expect(statusOf(raw)).toBe(401);
    expect(raw).toMatch(/\r\nconnection: keep-alive\r\n/i);
  });

  test('a chunked body is cut off with 413 as soon as it passes the limit, not after the client has sent it all', async () => {
    const { socket, response } = openRaw(port, headFor(port, { Authorization: `Bearer ${GOOD_SECRET}`, 'Transfer-Encoding': 'chunked' }));
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    let sentBytes = 0;
    let answered = false;
    void response.then(() => (answered = true));
    // Up to 30 MB, one 16 KiB chunk at a time, stopping as soon as the server answers.
    while (!answered && sentBytes < 30_000_000 && !socket.destroyed) {
      socket.write(`${chunk.length.toString(16)}\r\n`);
      socket.write(chunk);
      socket.write('\r\n');
      sentBytes += chunk.length;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const raw = await response;
    socket.destroy();
    expect(statusOf(raw)).toBe(413);
    expect(raw).toMatch(/\r\nconnection: close\r\n/i);
    // The limit is 64 KiB; socket buffers let some more through, but nowhere near 30 MB.
    expect(sentBytes).toBeLessThan(5_000_000);
  });

  test('a body that is not UTF-8 gets the parse error -32700', async () => {
    const notUtf8 = Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]); // {"\xff":1}
    const { socket, response } = openRaw(port, headFor(port, { Authorization: `Bearer ${GOOD_SECRET}`, 'Content-Length': String(notUtf8.length) }));
    socket.write(notUtf8);
    const raw = await response;
    socket.destroy();
    expect(statusOf(raw)).toBe(400);
    expect(bodyOf(raw).error.code).toBe(-32700);
  });

  test('a body that stops arriving gets 408 with Connection: close after the idle deadline', async () => {
    const startedMs = performance.now();
    const { socket, response } = openRaw(port, headFor(port, { Authorization: `Bearer ${GOOD_SECRET}`, 'Content-Length': '1000' }));
    socket.write('{"jsonrpc":');
    const raw = await response;
    socket.destroy();
    expect(statusOf(raw)).toBe(408);
    expect(raw).toMatch(/\r\nconnection: close\r\n/i);
    expect(bodyOf(raw).error).toMatchObject({ code: -32000, data: { reason: 'body_idle_timeout', idleTimeoutMs: 150 } });
    expect(performance.now() - startedMs).toBeLessThan(2_000);
  });

  test('a body that trickles in, never idle for long, gets 408 at the total deadline', async () => {
    const { socket, response } = openRaw(port, headFor(port, { Authorization: `Bearer ${GOOD_SECRET}`, 'Content-Length': '1000' }));
    const trickle = setInterval(() => socket.write(' '), 50);
    const raw = await response;
    clearInterval(trickle);
    socket.destroy();
    expect(statusOf(raw)).toBe(408);
    expect(bodyOf(raw).error).toMatchObject({ data: { reason: 'body_total_timeout', totalTimeoutMs: 600 } });
  });
});
