import express, { type Express } from 'express';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { authFailureKey, createAuthMiddleware } from '../../src/http/auth-middleware';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimitPolicy } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { silentLogger } from '../../src/shared/logger';
import { CachedTokenVerifier } from '../../src/tokens/cached-token-verifier';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import type { TokenStore } from '../../src/tokens/token-record';
import { generateToken } from '../../src/tokens/token-secret';
import { TokenService } from '../../src/tokens/token-service';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/**
 * The sign-in budget of ADR 0045 over three instances sharing one real
 * redis-server (each its own client, refusal cache and token cache): valid
 * first sign-ins behind one address all get in, made-up secrets verify no
 * more than the budget. The RTDB twin is auth-reservation-rtdb.test.ts.
 */
const FAILURES: RateLimitPolicy = { name: 'auth-failures', limit: 10, windowMs: 60_000 };
// Still from the test's start: a run across a minute boundary would get a second window of budget.
const frozenAtMs = Date.now();

let redis: RedisServer;
let dir: string;
const limiters: RateLimiter[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-sign-in-redis-'));
});
afterAll(async () => {
  await Promise.all(limiters.map((limiter) => limiter.close()));
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

async function instances(store: TokenStore, keyPrefix: string, lookups: { count: number }): Promise<{ app: Express; failures: RateLimiter }[]> {
  return Promise.all(
    [0, 1, 2].map(async () => {
      const failures = await createRateLimiter({ store: new RedisWindowStore({ url: redis.url, keyPrefix }), policy: FAILURES, timeoutMs: 30_000, clock: () => frozenAtMs });
      const unauthenticated = await createRateLimiter({ policy: { name: 'unauthenticated', limit: 1_000, windowMs: 60_000 } });
      limiters.push(failures, unauthenticated);
      await failures.whenReady(5_000);
      const counted: TokenStore = Object.assign(Object.create(store) as TokenStore, {
        findByHash: (hash: string) => {
          lookups.count++;
          return store.findByHash(hash);
        },
      });
      const app = express();
      app.post(
        '/mcp',
        createAuthMiddleware({ verifier: new CachedTokenVerifier({ store: counted }), authFailureLimiter: failures, unauthenticatedLimiter: unauthenticated, trustProxyHops: 0, requiredScope: 'mcp', logger: silentLogger }),
        (_req, res) => res.json({ ok: true }),
      );
      return { app, failures };
    }),
  );
}

test('40 valid tokens at once from one address over three instances on one Redis: 40 × 200, each looked up once, the budget whole afterwards', async () => {
  const store = new FileTokenStore({ path: path.join(dir, 'tokens-valid.json') });
  const service = new TokenService({ store, tiers: ['default'] });
  const tokens: string[] = [];
  for (let i = 0; i < 40; i++) tokens.push((await service.create({ name: `agent-${i}` })).secret);
  const lookups = { count: 0 };
  const apps = await instances(store, `sign-in-valid-${Date.now()}:`, lookups);
  const answers = await Promise.all(tokens.map((secret, i) => request(apps[i % 3]!.app).post('/mcp').set('Authorization', `Bearer ${secret}`).send({})));
  expect(answers.map((res) => res.status)).toEqual(Array(40).fill(200));
  expect(lookups.count).toBe(40);
  expect((await apps[2]!.failures.consume(authFailureKey('127.0.0.1'), { cost: 0 })).remaining).toBe(FAILURES.limit);
});

test('200 made-up secrets over three instances on one Redis: at most the budget looked up; then a bad secret and a valid token are refused 429 on each', async () => {
  const store = new FileTokenStore({ path: path.join(dir, 'tokens-guesses.json') });
  const valid = (await new TokenService({ store, tiers: ['default'] }).create({ name: 'neighbour' })).secret;
  const lookups = { count: 0 };
  const apps = await instances(store, `sign-in-guesses-${Date.now()}:`, lookups);
  const answers = await Promise.all(
    Array.from({ length: 200 }, (_, i) => request(apps[i % 3]!.app).post('/mcp').set('Authorization', `Bearer ${generateToken().secret}`).send({})),
  );
  expect(lookups.count).toBeLessThanOrEqual(FAILURES.limit);
  expect(answers.filter((res) => res.status === 401)).toHaveLength(lookups.count);
  expect(answers.filter((res) => res.status === 429)).toHaveLength(200 - lookups.count);
  const afterBurst = lookups.count;
  for (const { app } of apps) {
    expect((await request(app).post('/mcp').set('Authorization', `Bearer ${generateToken().secret}`).send({})).status).toBe(429);
    expect((await request(app).post('/mcp').set('Authorization', `Bearer ${valid}`).send({})).status).toBe(429);
  }
  expect(lookups.count).toBe(afterBurst);
});
