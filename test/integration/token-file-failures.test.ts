import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import express, { type Express } from 'express';
import request from 'supertest';
import { createAuthMiddleware } from '../../src/http/auth-middleware';
import { createRateLimiter } from '../../src/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/limiter/rate-limiter';
import { createServiceLogger } from '../../src/logging/create-service-logger';
import { CachedTokenVerifier } from '../../src/tokens/cached-token-verifier';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';

/**
 * A token file that breaks under a running server, seen from the outside:
 * the real auth middleware, verifier and file store, the service's JSON
 * logger, the file on disk.
 */

const FAILURE_BUDGET = 2;

let dir: string;
let file: string;
let limiter: RateLimiter;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-token-file-'));
  file = path.join(dir, 'tokens.json');
});
afterEach(async () => {
  await limiter?.close();
  await rm(dir, { recursive: true, force: true });
});

async function serve(): Promise<{ app: Express; logText: () => string; secret: string }> {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  const logger = createServiceLogger({ log: { format: 'json' }, firebase: { projectId: 'demo-firelimit' } as never }, { output: stream });
  const store = new FileTokenStore({ path: file, logger });
  const { secret } = await new TokenService({ store }).create({ name: 'survivor' });
  limiter = await createRateLimiter({ backend: 'memory', policy: { name: 'auth-failures', limit: FAILURE_BUDGET, windowMs: 60_000 } });
  const unauthenticatedLimiter = await createRateLimiter({ backend: 'memory', policy: { name: 'unauthenticated', limit: 1_000, windowMs: 60_000 } });
  const app = express();
  app.use(express.json());
  app.post(
    '/mcp',
    createAuthMiddleware({ verifier: new CachedTokenVerifier({ store, ttlMs: 0 }), authFailureLimiter: limiter, unauthenticatedLimiter, trustProxyHops: 0, requiredScope: 'mcp', logger }),
    (_req, res) => {
      res.json({ ok: true });
    },
  );
  return { app, logText: () => chunks.join(''), secret };
}

const post = (app: Express, secret: string) => request(app).post('/mcp').set('Authorization', `Bearer ${secret}`).send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

test('a deleted token file answers 503 (never 401 or 429) for a valid token, logs the path once, and serves again once restored', async () => {
  const { app, logText, secret } = await serve();
  expect((await post(app, secret)).status).toBe(200);
  const saved = await readFile(file, 'utf8');

  await rm(file);
  for (let i = 0; i < FAILURE_BUDGET + 3; i++) {
    const res = await post(app, secret);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
  }
  const lines = logText().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const fileLines = lines.filter((l) => l.event === 'tokens.file_unreadable');
  expect(fileLines).toEqual([
    expect.objectContaining({ severity: 'ERROR', message: 'token file is gone; sign-ins answer 503 until it is restored', path: file, code: 'ERR_FIRELIMIT_TOKEN_FILE_MISSING' }),
  ]);

  await writeFile(file, saved, { mode: 0o600 });
  // Not counted as failures while it was gone: the address was never locked out.
  expect((await post(app, secret)).status).toBe(200);
  expect(logText()).not.toContain(secret);
});

test('a token file corrupted under the server answers 503 and logs the path and reason once, without hashes', async () => {
  const { app, logText, secret } = await serve();
  const content = JSON.parse(await readFile(file, 'utf8')) as { tokens: Record<string, unknown>[] };
  const hash = content.tokens[0]?.secretHash as string;
  // A second record with the same hash: which one is meant is unknowable, so neither counts.
  await writeFile(file, JSON.stringify({ version: 1, tokens: [content.tokens[0], { ...content.tokens[0], id: 'tok_duplicate000000' }] }));
  for (let i = 0; i < 3; i++) expect((await post(app, secret)).status).toBe(503);
  const fileLines = logText()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.event === 'tokens.file_unreadable');
  expect(fileLines).toEqual([
    expect.objectContaining({
      severity: 'ERROR',
      path: file,
      code: 'ERR_FIRELIMIT_CORRUPT_TOKEN_RECORD',
      where: `${file} tokens[1]`,
      reason: 'same secretHash as tokens[0]; neither is used until one is removed',
    }),
  ]);
  expect(logText()).not.toContain(hash);
  expect(logText()).not.toContain(secret);
});
