import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createCapturingLogger } from '../support/capturing-logger';
import { createShutdown } from '../../src/service/graceful-shutdown';

/** createShutdown against a real http.Server, with exit injected so the test process survives it. */

interface Held {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
}

interface TestServer {
  readonly server: http.Server;
  readonly port: number;
  /** Requests the handler is holding open, in arrival order. */
  nextHeld(): Promise<Held>;
}

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    if (server.listening) await new Promise((resolve) => server.close(resolve));
  }
});

/** A server whose /hold requests wait until the test answers them; anything else gets 200 at once. */
async function startServer(): Promise<TestServer> {
  const waiting: ((held: Held) => void)[] = [];
  const arrived: Held[] = [];
  const handler: RequestListener = (req, res) => {
    if (req.url !== '/hold') {
      res.end('ok');
      return;
    }
    const next = waiting.shift();
    if (next !== undefined) next({ req, res });
    else arrived.push({ req, res });
  };
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    nextHeld: () => {
      const ready = arrived.shift();
      return ready !== undefined ? Promise.resolve(ready) : new Promise((resolve) => waiting.push(resolve));
    },
  };
}

interface ClientResult {
  readonly status?: number;
  readonly body?: string;
  readonly error?: NodeJS.ErrnoException;
}

/**
 * Without an agent the client sends `Connection: close`, so a finished request
 * leaves no idle socket behind (a kept-alive one would hold server.close() for
 * the keep-alive timeout; the idle-connection test covers that case).
 */
function get(port: number, path: string, agent: http.Agent | false = false): Promise<ClientResult> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', (error) => resolve({ error }));
    });
    req.on('error', (error) => resolve({ error }));
  });
}

function harness(overrides: { release?: () => Promise<void>; drainTimeoutMs?: number } = {}) {
  const logger = createCapturingLogger();
  const exit = jest.fn<void, [number]>();
  const release = jest.fn(overrides.release ?? (() => Promise.resolve()));
  const events = () => logger.entries.map((e) => e.fields.event);
  return { logger, exit, release, events, drainTimeoutMs: overrides.drainTimeoutMs ?? 5_000 };
}

describe('createShutdown', () => {
  test('waits for an in-flight request to finish, then releases and exits 0 without hitting the deadline', async () => {
    const { server, port, nextHeld } = await startServer();
    const h = harness();
    const shutdown = createShutdown({ servers: [server], release: h.release, logger: h.logger, drainTimeoutMs: h.drainTimeoutMs, exit: h.exit });

    const response = get(port, '/hold');
    const held = await nextHeld();
    const done = shutdown('SIGTERM');
    // Listening stops at once; the held request is still being served.
    expect(server.listening).toBe(false);
    expect(h.release).not.toHaveBeenCalled();

    held.res.end('finished');
    await expect(response).resolves.toEqual({ status: 200, body: 'finished' });
    await done;
    expect(h.release).toHaveBeenCalledTimes(1);
    expect(h.exit).toHaveBeenCalledWith(0);
    expect(h.events()).toEqual(['service.stopping', 'service.stopped']);
  });

  test('closes idle keep-alive connections at once instead of waiting for their timeout', async () => {
    const { server, port } = await startServer();
    const agent = new http.Agent({ keepAlive: true });
    try {
      await expect(get(port, '/', agent)).resolves.toMatchObject({ status: 200 });
      const h = harness({ drainTimeoutMs: 5_000 });
      const startedAt = Date.now();
      await createShutdown({ servers: [server], release: h.release, logger: h.logger, drainTimeoutMs: h.drainTimeoutMs, exit: h.exit })('SIGTERM');
      // server.keepAliveTimeout is 5 s: finishing well before it means the idle socket was closed, not waited out.
      expect(Date.now() - startedAt).toBeLessThan(2_000);
      expect(h.events()).not.toContain('service.drain_timeout');
      expect(h.exit).toHaveBeenCalledWith(0);
    } finally {
      agent.destroy();
    }
  });

  test('past the drain deadline, closes the connections still open and exits 0', async () => {
    const { server, port, nextHeld } = await startServer();
    const closeAll = jest.spyOn(server, 'closeAllConnections');
    const h = harness({ drainTimeoutMs: 150 });
    const shutdown = createShutdown({ servers: [server], release: h.release, logger: h.logger, drainTimeoutMs: h.drainTimeoutMs, exit: h.exit });

    const response = get(port, '/hold');
    await nextHeld(); // never answered: only the deadline can end it
    const startedAt = Date.now();
    await shutdown('SIGTERM');

    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(140);
    expect(closeAll).toHaveBeenCalled();
    // The client sees its connection cut, not a response.
    const result = await response;
    expect(result.status).toBeUndefined();
    expect(result.error?.code).toBe('ECONNRESET');
    expect(h.release).toHaveBeenCalledTimes(1);
    expect(h.exit).toHaveBeenCalledWith(0);
    expect(h.events()).toEqual(['service.stopping', 'service.drain_timeout', 'service.stopped']);
    expect(h.logger.entries[1]).toMatchObject({ severity: 'WARNING', fields: { drainTimeoutMs: 150 } });
  });

  test('a second signal during shutdown is ignored: one release, one exit, one stopping line', async () => {
    const { server, port, nextHeld } = await startServer();
    const h = harness();
    const shutdown = createShutdown({ servers: [server], release: h.release, logger: h.logger, drainTimeoutMs: h.drainTimeoutMs, exit: h.exit });

    const response = get(port, '/hold');
    const held = await nextHeld();
    const first = shutdown('SIGTERM');
    // The second call returns without waiting for the drain the first one is doing.
    await shutdown('SIGINT');
    expect(h.exit).not.toHaveBeenCalled();

    held.res.end('finished');
    await response;
    await first;
    await shutdown('SIGTERM');
    expect(h.release).toHaveBeenCalledTimes(1);
    expect(h.exit).toHaveBeenCalledTimes(1);
    expect(h.logger.entries.filter((e) => e.fields.event === 'service.stopping')).toEqual([
      expect.objectContaining({ fields: expect.objectContaining({ signal: 'SIGTERM' }) }),
    ]);
  });

  test('a release that fails makes the exit code 1, logs the failure by class, and still logs stopped', async () => {
    const { server } = await startServer();
    class ReleaseFailure extends Error {
      override readonly name = 'ReleaseFailure';
    }
    const h = harness({ release: () => Promise.reject(new ReleaseFailure('redis://user:secret@host lost')) });
    await createShutdown({ servers: [server], release: h.release, logger: h.logger, drainTimeoutMs: h.drainTimeoutMs, exit: h.exit })('SIGTERM');

    expect(h.exit).toHaveBeenCalledTimes(1);
    expect(h.exit).toHaveBeenCalledWith(1);
    expect(h.events()).toEqual(['service.stopping', 'service.release_failed', 'service.stopped']);
    const failed = h.logger.entries[1];
    expect(failed).toMatchObject({ severity: 'ERROR', fields: { error: 'ReleaseFailure' } });
    // The message may quote a URL with credentials; only the class is logged.
    expect(JSON.stringify(h.logger.entries)).not.toContain('secret');
  });

  test('a server that is no longer listening does not hold shutdown up', async () => {
    const { server } = await startServer();
    await new Promise((resolve) => server.close(resolve));
    const h = harness();
    await createShutdown({ servers: [server], release: h.release, logger: h.logger, drainTimeoutMs: h.drainTimeoutMs, exit: h.exit })('SIGTERM');
    expect(h.exit).toHaveBeenCalledWith(0);
    expect(h.events()).toEqual(['service.stopping', 'service.stopped']);
  });
});
