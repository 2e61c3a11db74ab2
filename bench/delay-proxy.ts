import net from 'node:net';

export interface DelayProxy {
  readonly port: number;
  close(): Promise<void>;
}

/** A delay read again for every chunk, so a test can slow the link down and speed it up while connected. */
export interface DelaySwitch {
  delayMs: number;
}

/**
 * A TCP relay on 127.0.0.1 that holds every chunk `delayMs` in each
 * direction, preserving order: a same-region network in front of a loopback
 * server. Used by the rtdb and algorithms benches, and (with a DelaySwitch)
 * by the outage tests.
 */
export async function startDelayProxy(targetPort: number, delay: number | DelaySwitch): Promise<DelayProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true);
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    const relay = typeof delay === 'number' ? fixedRelay(delay) : switchableRelay(delay);
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

type Relay = (from: net.Socket, to: net.Socket) => void;

// Timers of one duration fire in the order they were set, so chunks stay in order.
function fixedRelay(delayMs: number): Relay {
  return (from, to) => {
    from.on('data', (chunk) => setTimeout(() => to.destroyed || to.write(chunk), delayMs));
  };
}

// One queue per direction, each chunk held until its time: order is kept when the delay changes.
function switchableRelay(slow: DelaySwitch): Relay {
  return (from, to) => {
    let lastAtMs = 0;
    from.on('data', (chunk) => {
      const atMs = Math.max(performance.now() + slow.delayMs, lastAtMs);
      lastAtMs = atMs;
      setTimeout(() => to.destroyed || to.write(chunk), atMs - performance.now());
    });
  };
}
