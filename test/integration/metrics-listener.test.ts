import net from 'node:net';
import { Registry } from 'prom-client';
import { loadConfig } from '../../src/config/config';
import type { MetricsServer } from '../../src/metrics/metrics-server';
import { startMetricsListener } from '../../src/service/metrics-listener';

/** Node checks deadlines every this many ms; short here so the test waits for the deadline, not the timer. */
const CHECK_INTERVAL_MS = 50;

let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Sends the start of a request and never the end of its headers; resolves with what came back and when the server closed. */
function slowHeaders(port: number, host: string, capMs: number): Promise<{ received: string; closedAfterMs: number | undefined }> {
  return new Promise((resolve) => {
    const startedMs = performance.now();
    const socket = net.connect(port, host, () => socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n'));
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    const cap = setTimeout(() => {
      socket.destroy();
      resolve({ received, closedAfterMs: undefined });
    }, capMs);
    socket.on('close', () => {
      clearTimeout(cap);
      resolve({ received, closedAfterMs: performance.now() - startedMs });
    });
  });
}

test('a client that never finishes its headers is cut at HTTP_HEADERS_TIMEOUT_MS, as on the public port', async () => {
  const config = loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '1000' });
  server = await startMetricsListener(config, new Registry(), 0, CHECK_INTERVAL_MS);
  const { received, closedAfterMs } = await slowHeaders(server.port, '127.0.0.1', 4_000);
  expect(closedAfterMs).toBeDefined();
  expect(closedAfterMs).toBeGreaterThanOrEqual(900);
  expect(closedAfterMs).toBeLessThan(2_500);
  expect(received).toMatch(/^HTTP\/1\.1 408/);
});

test('it listens on loopback unless METRICS_HOST says otherwise', async () => {
  server = await startMetricsListener(loadConfig({}), new Registry(), 0);
  expect(server.address).toBe('127.0.0.1');
  await server.close();
  server = await startMetricsListener(loadConfig({ METRICS_HOST: '::1' }), new Registry(), 0);
  expect(server.address).toBe('::1');
  expect((await fetch(`http://[::1]:${server.port}/metrics`)).status).toBe(200);
});

test.each(['localhost', 'every', '127.0.0.1:9090', '*'])('METRICS_HOST=%s is refused with the knob and the fix', (value) => {
  expect(() => loadConfig({ METRICS_HOST: value })).toThrow(/METRICS_HOST[\s\S]*expected an IP address[\s\S]*set METRICS_HOST to the address/);
});
