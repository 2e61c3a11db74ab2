import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { describeError } from '../shared/describe-error';
import type { Logger } from '../shared/logger';

export interface GracefulShutdownOptions {
  readonly servers: readonly Server[];
  /** Releases what the service holds (database connections, clients) once HTTP has drained. */
  readonly release: () => Promise<void>;
  readonly logger: Logger;
  /** Cloud Run allows 10 s after SIGTERM; leave room for release and exit. Default 8000. */
  readonly drainTimeoutMs?: number;
  readonly exit?: (code: number) => void;
}

/**
 * Stop accepting, let in-flight requests finish, then close connections and
 * release resources. Idempotent: a second signal during shutdown does nothing.
 */
export function createShutdown(options: GracefulShutdownOptions): (signal: string) => Promise<void> {
  const drainTimeoutMs = options.drainTimeoutMs ?? 8000;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let started = false;
  return async (signal: string) => {
    if (started) return;
    started = true;
    const startedAtMs = Date.now();
    options.logger.info('shutting down: no new connections, finishing in-flight requests', { event: 'service.stopping', signal });
    // Keep-alive clients (Cloud Run's front end is one) would hold their
    // connections open, and could send more requests on them, until their
    // keep-alive timeout: answer what is in flight with Connection: close and
    // drop each connection as soon as it goes idle.
    // A server that handles Expect: 100-continue itself (./listen-dual-stack) gets those requests as
    // 'checkContinue', not 'request'; one that does not must keep Node's own handling, so no listener there.
    for (const server of options.servers) {
      server.on('request', markConnectionClose);
      if (server.listenerCount('checkContinue') > 0) server.on('checkContinue', markConnectionClose);
    }
    const drained = Promise.all(options.servers.map((server) => closeServer(server)));
    const closeIdle = () => {
      for (const server of options.servers) server.closeIdleConnections();
    };
    closeIdle();
    const idleSweep = setInterval(closeIdle, IDLE_SWEEP_MS);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), drainTimeoutMs);
    });
    const outcome = await Promise.race([drained.then(() => 'drained' as const), timedOut]);
    clearTimeout(timer);
    clearInterval(idleSweep);
    if (outcome === 'timeout') {
      options.logger.warn('drain deadline passed; closing remaining connections', { event: 'service.drain_timeout', drainTimeoutMs });
      for (const server of options.servers) server.closeAllConnections();
    }
    let code = 0;
    try {
      await options.release();
    } catch (error) {
      code = 1;
      options.logger.error('releasing resources failed during shutdown', { event: 'service.release_failed', error: describeError(error) });
    }
    options.logger.info('stopped', { event: 'service.stopped', durationMs: Date.now() - startedAtMs });
    exit(code);
  };
}

/** How often connections that went idle during the drain are closed. */
const IDLE_SWEEP_MS = 50;

function markConnectionClose(_req: IncomingMessage, res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
  });
}
