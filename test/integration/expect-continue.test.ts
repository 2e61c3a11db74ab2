import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/config';
import { silentLogger } from '../../src/shared/logger';
import { buildService, type Service } from '../../src/service/build-service';
import { listenDualStack, type Listening } from '../../src/service/listen-dual-stack';
import { TokenService } from '../../src/tokens/token-service';

const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } });

let dir: string;
let service: Service;
let listening: Listening;
let secret: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-continue-'));
  service = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), MAX_BODY_BYTES: '4096' }), { logger: silentLogger });
  ({ secret } = await new TokenService({ store: service.tokenStore, tiers: ['default'] }).create({ name: 'continue' }));
  // The listener the service runs on (src/server.ts), not supertest's, which answers 100 itself.
  listening = await listenDualStack(service.app, 0);
});
afterAll(async () => {
  listening.server.closeAllConnections();
  await new Promise((resolve) => listening.server.close(resolve));
  await service.release();
  await rm(dir, { recursive: true, force: true });
});

/**
 * Sends the headers with Expect: 100-continue and waits for the server's
 * first answer; sends the body only if that answer is 100 Continue, then
 * reads to the end.
 */
function expectContinue(headerLines: readonly string[], contentLength = Buffer.byteLength(body)): Promise<{ first: string; all: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(listening.port, '127.0.0.1');
    let all = '';
    let first: string | undefined;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      all += chunk;
      if (first === undefined && all.includes('\r\n')) {
        first = all.slice(0, all.indexOf('\r\n'));
        if (first.startsWith('HTTP/1.1 100')) socket.write(body);
      }
    });
    socket.on('end', () => resolve({ first: first ?? '', all }));
    socket.on('error', reject);
    socket.write(
      ['POST /mcp HTTP/1.1', 'Host: localhost', 'Accept: application/json', 'Content-Type: application/json', `Content-Length: ${contentLength}`, 'Expect: 100-continue', 'Connection: close', ...headerLines, '', ''].join('\r\n'),
    );
  });
}

test('a request without a token gets its 401 and no 100 Continue: it was never invited to send its body', async () => {
  const { first, all } = await expectContinue([]);
  expect(first).toBe('HTTP/1.1 401 Unauthorized');
  expect(all).not.toContain('100 Continue');
});

test('a request whose Content-Length is over MAX_BODY_BYTES gets 413 and no 100 Continue', async () => {
  const { first, all } = await expectContinue([`Authorization: Bearer ${secret}`], 1_000_000);
  expect(first).toBe('HTTP/1.1 413 Payload Too Large');
  expect(all).not.toContain('100 Continue');
});

test('a request that passed every check without its body is invited, sends it, and is served', async () => {
  const { first, all } = await expectContinue([`Authorization: Bearer ${secret}`]);
  expect(first).toBe('HTTP/1.1 100 Continue');
  expect(all).toMatch(/\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
  expect(all).toContain('"tier":"default"');
});
