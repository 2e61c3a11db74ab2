import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { Express } from 'express';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { createServiceLogger } from '../../src/logging/create-service-logger';
import { buildService, type Service } from '../../src/service/build-service';
import { TokenService } from '../../src/tokens/token-service';

/**
 * A token file that breaks under a running server, seen from the outside:
 * the service as buildService builds it (real auth middleware, verifier and
 * file store) with the service's JSON logger, and the file on disk.
 */

const FAILURE_BUDGET = 2;
/** The shortest cache TTL the config takes; every request steps the clock past it, so each one asks the file. */
const TTL_MS = 1;
const WINDOW_START_MS = 1_700_000_040_000; // a minute boundary: the few steps below stay in one failure window

let dir: string;
let file: string;
let service: Service | undefined;
let nowMs: number;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-token-file-'));
  file = path.join(dir, 'tokens.json');
  nowMs = WINDOW_START_MS;
});
afterEach(async () => {
  await service?.release();
  service = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function serve(): Promise<{ app: Express; logText: () => string; secret: string }> {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  const config = loadConfig({
    TOKENS_FILE: file,
    AUTH_FAILURES_PER_MINUTE: String(FAILURE_BUDGET),
    TOKEN_CACHE_TTL_MS: String(TTL_MS),
    LOG_FORMAT: 'json',
    GOOGLE_CLOUD_PROJECT: 'demo-firelimit',
  });
  const logger = createServiceLogger(config, { output: stream });
  service = await buildService(config, { logger, clock: () => nowMs });
  const { secret } = await new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) }).create({ name: 'survivor' });
  return { app: service.app, logText: () => chunks.join(''), secret };
}

const post = (app: Express, secret: string) => {
  nowMs += TTL_MS;
  return request(app)
    .post('/mcp')
    .set('Accept', 'application/json, text/event-stream')
    .set('Authorization', `Bearer ${secret}`)
    .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
};

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
