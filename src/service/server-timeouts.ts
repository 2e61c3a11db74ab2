import type { Server } from 'node:http';

export interface ServerTimeouts {
  /** Most time for a request's headers to arrive (`config.http.headersTimeoutMs`, default 10 000). */
  readonly headersTimeoutMs: number;
  /** Most time for a whole request, headers and body, to arrive (`config.http.requestTimeoutMs`, default 30 000). 0 = none. */
  readonly requestTimeoutMs: number;
  /**
   * How long an idle keep-alive connection waits for its next request
   * (`config.http.keepAliveTimeoutMs`, default 5 000); Node 20 adds its own
   * 1 s buffer before it closes the socket.
   */
  readonly keepAliveTimeoutMs: number;
  /** Most open connections at once (`config.http.maxConnections`); 0 = no cap (default). */
  readonly maxConnections: number;
}

/**
 * Bounds how long a slow or silent client can hold a connection. Without
 * these a request whose body never arrives was held 328 s. Node answers a
 * request that overruns with 408 and closes it.
 *
 * Node checks the headers and request deadlines on a timer that runs every
 * `connectionsCheckingInterval` ms (30 s by default, fixed when the server
 * starts listening), so a request is cut between its deadline and one
 * interval later. Our own body reader answers 408 sooner for /mcp.
 *
 * Throws a RangeError naming the field for a value Node would misuse:
 * negative or fractional figures, or headers allowed longer than the whole
 * request (Node refuses that combination at createServer).
 */
export function applyServerTimeouts(server: Server, timeouts: ServerTimeouts): void {
  for (const name of ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxConnections'] as const) {
    const value = timeouts[name];
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative whole number, got ${String(value)}`);
  }
  if (timeouts.requestTimeoutMs > 0 && timeouts.headersTimeoutMs > timeouts.requestTimeoutMs) {
    throw new RangeError(`headersTimeoutMs (${timeouts.headersTimeoutMs}) must not exceed requestTimeoutMs (${timeouts.requestTimeoutMs})`);
  }
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  // Node's maxConnections = 0 would refuse every connection; 0 here means no cap.
  if (timeouts.maxConnections > 0) server.maxConnections = timeouts.maxConnections;
}
