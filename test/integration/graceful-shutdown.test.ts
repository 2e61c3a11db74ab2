import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { freePort, healthz, jsonLines, startServerProcess, waitFor, type ServerProcess } from '../support/server-process';
import { PRICED_STATUS } from '../support/mcp-test-app';

/**
 * The real entry point (src/server.ts) in its own process, stopped the way
 * Cloud Run stops it: SIGTERM while a request is still arriving. The request
 * is held open with `Expect: 100-continue` and half a body: the server's
 * automatic "100 Continue" proves it has parsed the headers (the request is
 * in flight, not an idle connection) before the signal is sent, so the test
 * never guesses with a sleep.
 */

const READY_TIMEOUT_MS = 30_000;
const EXIT_DEADLINE_MS = 10_000; // Cloud Run's grace period after SIGTERM

/** Resolves with the connect error's code, or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
}

describe('the server process on SIGTERM', () => {
  let dir: string;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-shutdown-'));
  });

  afterAll(async () => {
    if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exit;
    }
    await rm(dir, { recursive: true, force: true });
  });

  test('refuses new connections, finishes the in-flight request with a real response, logs stopping/stopped and exits 0 within 10 s', async () => {
    const tokensFile = path.join(dir, 'tokens.json');
    // The token is made through the same store the server reads, so the held request gets a real 200.
    const store = new FileTokenStore({ path: tokensFile });
    const { secret } = await new TokenService({ store }).create({ name: 'shutdown-test' });
    await store.close();

    server = startServerProcess(await freePort(), { ...PRICED_STATUS, TOKENS_FILE: tokensFile });
    const { port } = server;
    await waitFor('/healthz to answer 200', READY_TIMEOUT_MS, async () => (await healthz(port)) === 200, server);

    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });
    const half = Math.floor(body.length / 2);
    // Keep-alive like Cloud Run's front end: the server must not leave the connection open after answering.
    const agent = new http.Agent({ keepAlive: true });
    const inFlight = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/mcp',
      agent,
      headers: {
        Host: `localhost:${port}`,
        Authorization: `Bearer ${secret}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Content-Length': Buffer.byteLength(body),
        Expect: '100-continue',
      },
    });
    const response = new Promise<{ status?: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
      inFlight.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
      });
      inFlight.on('error', reject);
    });
    const continued = new Promise<void>((resolve) => inFlight.once('continue', resolve));
    inFlight.flushHeaders();
    await continued;
    inFlight.write(body.slice(0, half));

    const signalledAt = Date.now();
    server.child.kill('SIGTERM');

    // The listener closes at once, while the held request keeps the process alive.
    const refusedAfterMs = await waitFor('new connections to be refused', 2_000, async () => (await tryConnect(port)) === 'ECONNREFUSED');
    expect(refusedAfterMs).toBeLessThan(2_000);
    expect(server.child.exitCode).toBeNull();

    inFlight.end(body.slice(half));
    const res = await response;
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBe('120');
    expect(JSON.parse(res.text)).toMatchObject({ jsonrpc: '2.0', id: 7, result: { structuredContent: { limit: 120, remaining: 119 } } });

    const exit = await Promise.race([
      server.exit,
      new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), EXIT_DEADLINE_MS - (Date.now() - signalledAt)).unref()),
    ]);
    agent.destroy();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(EXIT_DEADLINE_MS);

    const events = jsonLines(server.stdout()).map((entry) => entry.event);
    expect(events).toContain('service.started');
    expect(events).toContain('service.stopping');
    expect(events).toContain('service.stopped');
    expect(events).not.toContain('service.drain_timeout');
    // The held request was logged as served, after shutdown had started.
    expect(events.indexOf('service.stopping')).toBeLessThan(events.lastIndexOf('http.request'));
    expect(events.lastIndexOf('http.request')).toBeLessThan(events.indexOf('service.stopped'));
  });
});
