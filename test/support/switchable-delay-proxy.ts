import net from 'node:net';
import type { DelayProxy } from '../../bench/delay-proxy';

/** bench/delay-proxy.ts's relay with a delay that can change while connected. */
export async function startSwitchableProxy(targetPort: number, slow: { delayMs: number }): Promise<DelayProxy> {
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
    // One queue per direction, each chunk held until its time: order is kept when the delay changes.
    const relay = (from: net.Socket, to: net.Socket) => {
      let lastAtMs = 0;
      from.on('data', (chunk) => {
        const atMs = Math.max(performance.now() + slow.delayMs, lastAtMs);
        lastAtMs = atMs;
        setTimeout(() => to.destroyed || to.write(chunk), atMs - performance.now());
      });
    };
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
