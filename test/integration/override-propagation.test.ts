import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { runLimitsCli } from '../../src/cli/limits-cli';
import { EXIT_OK } from '../../src/cli/run-as-main';
import { runTokenCli } from '../../src/cli/token-cli';
import { startFirestoreTestServer, TEST_PROJECT_ID, type FirestoreTestServer } from '../support/firestore-server';
import { startReadyServer, type ServerProcess } from '../support/server-process';

/**
 * An override set from the command line reaches two running server processes
 * that share a store, within 10 s (LIMIT_OVERRIDES_POLL_MS left at its 5 s
 * default), and expires by itself, on the file store and on Firestore.
 * Real processes, real clocks: the waits are bounded polls, never sleeps.
 */
const APPLY_WITHIN_MS = 10_000;
const EXPIRES = '12s';
const EXPIRES_MS = 12_000;
const io = () => {
  const out = { stdout: '', stderr: '' };
  return { out, streams: { stdout: { write: (s: string) => (out.stdout += s) }, stderr: { write: (s: string) => (out.stderr += s) } } };
};

function limitSeenBy(port: number, secret: string): Promise<string | undefined> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/mcp',
        agent: false,
        headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Content-Length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.headers['x-ratelimit-limit'] as string | undefined));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Polls every 200 ms until every server reports `limit`; resolves with the time it took. */
async function untilAllSee(servers: readonly ServerProcess[], secret: string, limit: string, timeoutMs: number): Promise<number> {
  const startedAt = Date.now();
  const pending = new Set(servers);
  while (pending.size > 0) {
    if (Date.now() - startedAt > timeoutMs) throw new Error(`after ${timeoutMs} ms, ${pending.size} server(s) still do not report x-ratelimit-limit ${limit}`);
    for (const server of [...pending]) if ((await limitSeenBy(server.port, secret)) === limit) pending.delete(server);
    if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return Date.now() - startedAt;
}

async function scenario(env: Record<string, string>): Promise<void> {
  const created = io();
  expect(await runTokenCli(['create', '--name', 'noisy', '--json'], env, created.streams)).toBe(EXIT_OK);
  const { id, token: secret } = JSON.parse(created.out.stdout) as { id: string; token: string };
  const servers = await Promise.all([startReadyServer(env), startReadyServer(env)]);
  try {
    for (const server of servers) expect(await limitSeenBy(server.port, secret)).toBe('120');

    const set = io();
    const setAtMs = Date.now();
    expect(await runLimitsCli(['set', '--token', id, '--per-minute', '7', '--expires', EXPIRES, '--json'], env, set.streams)).toBe(EXIT_OK);
    expect(JSON.parse(set.out.stdout)).toMatchObject({ override: `token=${id}`, perMinute: 7 });
    expect(await untilAllSee(servers, secret, '7', APPLY_WITHIN_MS)).toBeLessThan(APPLY_WITHIN_MS);

    // It vanishes by itself at its expiry: nobody runs unset.
    await untilAllSee(servers, secret, '120', EXPIRES_MS + APPLY_WITHIN_MS);
    expect(Date.now() - setAtMs).toBeGreaterThanOrEqual(EXPIRES_MS - 50);
    for (const server of servers) {
      const logged = server.stdout() + server.stderr();
      expect(logged).toContain('"event":"ratelimit.override_set"');
      expect(logged).not.toContain(secret);
    }
  } finally {
    await Promise.all(servers.map((server) => server.kill()));
  }
}

describe('a runtime override reaches every running instance within 10 s and expires', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-overrides-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test('on the file store (limit-overrides.json beside TOKENS_FILE)', async () => {
    await scenario({ TOKENS_FILE: path.join(dir, 'tokens.json') });
  });

  describe('on Firestore', () => {
    let server: FirestoreTestServer;
    beforeAll(async () => {
      server = await startFirestoreTestServer();
    });
    afterAll(() => server?.close());

    test('(the limitOverrides collection)', async () => {
      await scenario({ TOKEN_STORE: 'firestore', GOOGLE_CLOUD_PROJECT: TEST_PROJECT_ID, FIRESTORE_EMULATOR_HOST: server.host });
    });
  });
});
