import type { App } from 'firebase-admin/app';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { getDatabase } from 'firebase-admin/database';
import express, { type Express } from 'express';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { authFailureKey, createAuthMiddleware } from '../../src/http/auth-middleware';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimitPolicy } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { silentLogger } from '../../src/shared/logger';
import { CachedTokenVerifier } from '../../src/tokens/cached-token-verifier';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import type { TokenVerifier } from '../../src/tokens/token-record';
import { generateToken } from '../../src/tokens/token-secret';
import { TokenService } from '../../src/tokens/token-service';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';

const FAILURES: RateLimitPolicy = { name: 'auth-failures', limit: 10, windowMs: 60_000 };
// The clock stands still from the test's start: a run that crossed a minute boundary would get a second window of budget.
const frozenAtMs = Date.now();
const UNAUTHENTICATED: RateLimitPolicy = { name: 'unauthenticated', limit: 1_000, windowMs: 60_000 };

let server: RtdbTestServer;
let dir: string;
const apps: App[] = [];
const limiters: RateLimiter[] = [];

beforeAll(async () => {
  server = await rtdbForTests();
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-auth-rtdb-'));
});
afterAll(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  await Promise.all(apps.map((a) => deleteAdminApp(a)));
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** One service instance: its own firebase client (own connection, own cache), the failure budget on RTDB. */
async function instance(store: FileTokenStore, rootPath: string, verifications: { count: number }): Promise<{ app: Express; failures: RateLimiter }> {
  const adminApp = createAdminApp(server);
  apps.push(adminApp);
  // The claim is the shared store's atomicity. With the default 1.5 s deadline a loaded machine (CI once)
  // measures the outage path instead: each instance then answers from its own local window (ADR 0003).
  const failures = await createRateLimiter({ store: new RtdbWindowStore({ database: getDatabase(adminApp), rootPath }), policy: FAILURES, timeoutMs: 30_000, clock: () => frozenAtMs });
  const unauthenticated = await createRateLimiter({ policy: UNAUTHENTICATED });
  limiters.push(failures, unauthenticated);
  await failures.whenReady(5_000);
  const cached = new CachedTokenVerifier({ store });
  const verifier: TokenVerifier = {
    verify: (secret) => {
      verifications.count++;
      return cached.verify(secret);
    },
    peek: (secret) => cached.peek(secret),
  };
  const app = express();
  app.post(
    '/mcp',
    createAuthMiddleware({ verifier, authFailureLimiter: failures, unauthenticatedLimiter: unauthenticated, trustProxyHops: 0, requiredScope: 'mcp', logger: silentLogger }),
    (_req, res) => res.json({ ok: true }),
  );
  return { app, failures };
}

test('two instances on one RTDB verify no more guesses from one address than its budget, in a parallel burst of 200', async () => {
  const store = new FileTokenStore({ path: path.join(dir, 'tokens.json') });
  const good = (await new TokenService({ store, tiers: ['default'] }).create({ name: 'good' })).secret;
  const verifications = { count: 0 };
  const root = `authFailures${Date.now()}`;
  const [a, b] = await Promise.all([instance(store, root, verifications), instance(store, root, verifications)]);
  const secrets = Array.from({ length: 200 }, (_, i) => (i === 150 ? good : generateToken().secret));
  const answers = await Promise.all(
    secrets.map((secret, i) => request((i % 2 === 0 ? a : b)!.app).post('/mcp').set('Authorization', `Bearer ${secret}`).send({})),
  );
  const statuses = answers.map((res) => res.status);
  expect(verifications.count).toBeLessThanOrEqual(FAILURES.limit);
  expect(statuses.filter((s) => s !== 429).length).toBeLessThanOrEqual(FAILURES.limit);
  // supertest connects from 127.0.0.1; with TRUST_PROXY_HOPS=0 that is the address counted.
  const budget = await a!.failures.consume(authFailureKey('127.0.0.1'), { cost: 0 });
  expect(budget.remaining).toBe(0);
});

test('one valid token, 60 parallel first calls over three instances on one RTDB: 60 × 200, one verification and one reservation per instance', async () => {
  const store = new FileTokenStore({ path: path.join(dir, 'tokens-one.json') });
  const good = (await new TokenService({ store, tiers: ['default'] }).create({ name: 'good' })).secret;
  const verifications = { count: 0 };
  const root = `authFailuresOne${Date.now()}`;
  const instances = await Promise.all([instance(store, root, verifications), instance(store, root, verifications), instance(store, root, verifications)]);
  const answers = await Promise.all(
    Array.from({ length: 60 }, (_, i) => request(instances[i % 3]!.app).post('/mcp').set('Authorization', `Bearer ${good}`).send({})),
  );
  expect(answers.map((res) => res.status)).toEqual(Array(60).fill(200));
  expect(verifications.count).toBe(3);
  const budget = await instances[0]!.failures.consume(authFailureKey('127.0.0.1'), { cost: 0 });
  expect(budget.remaining).toBe(FAILURES.limit);
});

test('40 valid tokens at once from one address on one instance on RTDB: 40 × 200, and the budget whole afterwards', async () => {
  const store = new FileTokenStore({ path: path.join(dir, 'tokens-forty.json') });
  const service = new TokenService({ store, tiers: ['default'] });
  const tokens: string[] = [];
  for (let i = 0; i < 40; i++) tokens.push((await service.create({ name: `agent-${i}` })).secret);
  const verifications = { count: 0 };
  const { app, failures } = await instance(store, `authFailuresForty${Date.now()}`, verifications);
  const answers = await Promise.all(tokens.map((secret) => request(app).post('/mcp').set('Authorization', `Bearer ${secret}`).send({})));
  expect(answers.map((res) => res.status)).toEqual(Array(40).fill(200));
  expect((await failures.consume(authFailureKey('127.0.0.1'), { cost: 0 })).remaining).toBe(FAILURES.limit);
});

test('40 valid tokens at once from one address over three instances on one RTDB: 40 × 200, though each instance finds the budget held by the others', async () => {
  const store = new FileTokenStore({ path: path.join(dir, 'tokens-spread.json') });
  const service = new TokenService({ store, tiers: ['default'] });
  const tokens: string[] = [];
  for (let i = 0; i < 40; i++) tokens.push((await service.create({ name: `agent-${i}` })).secret);
  const verifications = { count: 0 };
  const root = `authFailuresSpread${Date.now()}`;
  const instances = await Promise.all([instance(store, root, verifications), instance(store, root, verifications), instance(store, root, verifications)]);
  const answers = await Promise.all(tokens.map((secret, i) => request(instances[i % 3]!.app).post('/mcp').set('Authorization', `Bearer ${secret}`).send({})));
  expect(answers.map((res) => res.status)).toEqual(Array(40).fill(200));
  expect(verifications.count).toBe(40);
  expect((await instances[1]!.failures.consume(authFailureKey('127.0.0.1'), { cost: 0 })).remaining).toBe(FAILURES.limit);
});

test('200 made-up secrets over three instances on one RTDB: no more looked up than the budget, and afterwards a bad secret is refused 429 on each', async () => {
  const store = new FileTokenStore({ path: path.join(dir, 'tokens-guesses.json') });
  const verifications = { count: 0 };
  const root = `authFailuresGuess${Date.now()}`;
  const instances = await Promise.all([instance(store, root, verifications), instance(store, root, verifications), instance(store, root, verifications)]);
  const answers = await Promise.all(
    Array.from({ length: 200 }, (_, i) => request(instances[i % 3]!.app).post('/mcp').set('Authorization', `Bearer ${generateToken().secret}`).send({})),
  );
  expect(verifications.count).toBeLessThanOrEqual(FAILURES.limit);
  expect(answers.filter((res) => res.status === 401)).toHaveLength(verifications.count);
  expect(answers.filter((res) => res.status === 429)).toHaveLength(200 - verifications.count);
  for (const { app } of instances) {
    const bad = await request(app).post('/mcp').set('Authorization', `Bearer ${generateToken().secret}`).send({});
    expect(bad.status).toBe(429);
  }
  expect(verifications.count).toBeLessThanOrEqual(FAILURES.limit);
});
