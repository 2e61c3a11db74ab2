import type { RequestListener, Server } from 'node:http';
import { createServiceServer } from './express-server';

/** Where the service listened, as Node reported it. */
export interface Listening {
  readonly server: Server;
  readonly port: number;
  /** `::` (IPv6 and IPv4 on one socket) or `0.0.0.0` when this host has no IPv6. */
  readonly host: '::' | '0.0.0.0';
}

/** Errors that mean "this host cannot open an IPv6 socket", after which IPv4 alone is the right answer. */
const NO_IPV6 = new Set(['EAFNOSUPPORT', 'EADDRNOTAVAIL', 'EPROTONOSUPPORT']);

/**
 * Listens on `::`, which on Linux accepts IPv6 and IPv4 (as ::ffff:a.b.c.d)
 * on one socket, so `[::1]` and `127.0.0.1` both reach the service, as the
 * loopback Host allowlist already promises. A host without IPv6 (a container
 * with it disabled) gets `0.0.0.0` instead of a failed boot; any other error
 * (the port is taken) is the caller's.
 */
export async function listenDualStack(handler: RequestListener, port: number): Promise<Listening> {
  try {
    return await listenOn(handler, port, '::');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || !NO_IPV6.has(code)) throw error;
    return listenOn(handler, port, '0.0.0.0');
  }
}

function listenOn(handler: RequestListener, port: number, host: '::' | '0.0.0.0'): Promise<Listening> {
  const server = createServiceServer(handler);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    // ipv6Only false is Node's default; said here because the dual stack is the point.
    server.listen({ port, host, ipv6Only: false }, () => {
      server.off('error', reject);
      const address = server.address();
      resolve({ server, host, port: typeof address === 'object' && address !== null ? address.port : port });
    });
  });
}
