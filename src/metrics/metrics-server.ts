import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServerOptions {
  readonly registry: Registry;
  /** 0 picks a free port (tests). */
  readonly port: number;
  /**
   * Address to listen on (METRICS_HOST). Default '127.0.0.1': this host
   * and, on Cloud Run, the sidecars beside the container (they share its
   * loopback). Every interface only when asked ('0.0.0.0').
   */
  readonly host?: string;
  /**
   * Applied to the listener before it listens: the service passes the public
   * port's HTTP timeouts, so a slow client cannot hold this one longer.
   * Default: none (Node's own).
   */
  readonly configure?: (server: Server) => void;
  /** How often Node checks the header and request deadlines (fixed at creation); default Node's 30 000 ms. Tests shorten it. */
  readonly connectionsCheckingIntervalMs?: number;
}

export const METRICS_HOST_DEFAULT = '127.0.0.1';

export interface MetricsServer {
  /** The port actually bound (differs from the option when it was 0). */
  readonly port: number;
  /** The address actually bound. */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * `/metrics` on a listener of its own, off the public port: the public app
 * never serves it, so operational figures do not need auth or a route guard.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const serverOptions = options.connectionsCheckingIntervalMs === undefined ? {} : { connectionsCheckingInterval: options.connectionsCheckingIntervalMs };
  const server = createServer(serverOptions, (req, res) => {
    void handle(options.registry, req, res);
  });
  // Scrapers keep connections alive; close() must not wait for them.
  server.keepAliveTimeout = 5_000;
  options.configure?.(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? METRICS_HOST_DEFAULT, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port, address } = server.address() as AddressInfo;
  return {
    port,
    address,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
}

async function handle(registry: Registry, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/metrics') {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found; metrics are at /metrics\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
    return;
  }
  try {
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch {
    // A failing collector must not take the listener down; the scrape shows as failed instead.
    res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics collection failed\n');
  }
}
