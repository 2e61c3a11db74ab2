import type { Registry } from 'prom-client';
import type { Config } from '../config/config';
import { startMetricsServer, type MetricsServer } from '../metrics/metrics-server';
import { applyServerTimeouts } from './server-timeouts';

/**
 * The /metrics listener as the service runs it: on `METRICS_HOST` (loopback
 * by default) and under the public port's HTTP deadlines. On Node's own
 * defaults a client that never finished its headers held it 85 s while the
 * public port cut it at 16 s.
 *
 * `connectionsCheckingIntervalMs`: how often Node checks those deadlines;
 * default Node's 30 000 ms, as on the public port. Tests shorten it.
 */
export function startMetricsListener(config: Config, registry: Registry, port: number, connectionsCheckingIntervalMs?: number): Promise<MetricsServer> {
  return startMetricsServer({
    registry,
    port,
    host: config.metrics.host,
    configure: (server) => applyServerTimeouts(server, config.http),
    ...(connectionsCheckingIntervalMs === undefined ? {} : { connectionsCheckingIntervalMs }),
  });
}
