import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { PolicySet } from '../../src/library/window/policy';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { REDIS_UNAVAILABLE } from '../../src/library/backends/redis/redis-store-error';

// REDIS_TLS_CA_FILE against Debian's redis-server with TLS on loopback: a CA
// made for this test signs the server's certificate for "localhost", as a
// managed Redis' private CA does. Readiness is polled, never slept for.

const POLICIES: PolicySet = [{ name: 'minute', limit: 2, windowMs: 60_000 }];
let dir: string;
let server: ChildProcess;
let port: number;

function openssl(...args: string[]): void {
  const result = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-tls-'));
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=firelimit test CA');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(path.join(dir, 'ext'), 'subjectAltName=DNS:localhost\n');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '1', '-extfile', 'ext');
  port = await freePort();
  server = spawn('/usr/bin/redis-server', [
    '--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '::1',
    '--tls-cert-file', path.join(dir, 'server.pem'), '--tls-key-file', path.join(dir, 'server.key'),
    '--tls-ca-cert-file', path.join(dir, 'ca.pem'), '--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no',
  ], { stdio: 'ignore' });
});

afterAll(() => {
  server?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('with REDIS_TLS_CA_FILE the store trusts the private CA over rediss:// and decides', async () => {
  const store = new RedisWindowStore({ url: `rediss://localhost:${port}`, tlsCaFile: path.join(dir, 'ca.pem'), keyPrefix: 'tls:' });
  try {
    expect(await store.whenReady(10_000)).toBe(true);
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push((await store.consume('tok_tls', 1_700_000_040_000, POLICIES, 1)).allowed);
    expect(decisions).toEqual([true, true, false]);
  } finally {
    await store.close();
  }
});

test('without the CA file the same server is refused (its certificate is not trusted): an outage, not a decision', async () => {
  // Once the first store is ready the server is up, so this refusal is the certificate's.
  const trusting = new RedisWindowStore({ url: `rediss://localhost:${port}`, tlsCaFile: path.join(dir, 'ca.pem') });
  const untrusting = new RedisWindowStore({ url: `rediss://localhost:${port}` });
  try {
    expect(await trusting.whenReady(10_000)).toBe(true);
    expect(await untrusting.whenReady(1500)).toBe(false);
    await expect(untrusting.consume('tok_tls2', 1_700_000_040_000, POLICIES, 1)).rejects.toMatchObject({ code: REDIS_UNAVAILABLE });
  } finally {
    await Promise.all([trusting.close(), untrusting.close()]);
  }
});

test('a CA file with a redis:// URL is refused at once, naming the remedy', () => {
  expect(() => new RedisWindowStore({ url: `redis://localhost:${port}`, tlsCaFile: path.join(dir, 'ca.pem') })).toThrow(/tlsCaFile is set but the URL is redis:\/\/; use rediss:\/\//);
});
