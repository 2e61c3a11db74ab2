import http from 'node:http';
import net from 'node:net';
import { listenDualStack } from '../../src/service/listen-dual-stack';

/** Whether this host can open an IPv6 loopback socket at all (some containers have IPv6 off). */
async function hasIpv6Loopback(): Promise<boolean> {
  const probe = net.createServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(0, '::1', () => probe.close(() => resolve(true)));
  });
}

function get(host: string, port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path: '/', family: host.includes(':') ? 6 : 4 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

test('the service listens on both stacks: [::1] and 127.0.0.1 reach it on one port, each seen from its own address', async () => {
  const { server, port, host } = await listenDualStack((req, res) => res.end(req.socket.remoteAddress), 0);
  try {
    const ipv6 = await hasIpv6Loopback();
    expect(host).toBe(ipv6 ? '::' : '0.0.0.0');
    const v4 = await get('127.0.0.1', port);
    expect(v4.status).toBe(200);
    expect(['127.0.0.1', '::ffff:127.0.0.1']).toContain(v4.body);
    if (ipv6) {
      const v6 = await get('::1', port);
      expect(v6).toEqual({ status: 200, body: '::1' });
    }
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('a port already taken is the caller\'s error, not a silent fallback to IPv4', async () => {
  const first = await listenDualStack((_req, res) => res.end(), 0);
  try {
    await expect(listenDualStack((_req, res) => res.end(), first.port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
  } finally {
    await new Promise<void>((resolve) => first.server.close(() => resolve()));
  }
});
