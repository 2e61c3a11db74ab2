import express, { type Express } from 'express';
import request from 'supertest';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { authFailureKey, createAuthMiddleware } from '../../src/http/auth-middleware';
import { tokenOf } from '../../src/http/request-locals';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { silentLogger } from '../../src/shared/logger';
import { CachedTokenVerifier } from '../../src/tokens/cached-token-verifier';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import type { AuthenticatedToken, TokenStore } from '../../src/tokens/token-record';
import { generateToken } from '../../src/tokens/token-secret';
import { TokenService } from '../../src/tokens/token-service';

/**
 * Valid callers in parallel behind one address (an agent platform, a NAT, a
 * hosted connector's egress pool) on the memory backend, through the real
 * middleware and token cache, with the default figures (10 failed sign-ins a
 * minute per address, a 30 s token cache). Issue 19 item 1; ADR 0045.
 */
const FAILURES_PER_MINUTE = 10;
const TOKEN_CACHE_TTL_MS = 30_000;
// 10 s into a minute window, so an advance past the cache TTL stays in the same failure window.
const START_MS = 1_700_000_050_000;
const ADDRESS = '203.0.113.7';

interface Harness {
  readonly app: Express;
  readonly failures: RateLimiter;
  readonly unauthenticated: RateLimiter;
  /** Token store reads (findByHash) so far. */
  lookups(): number;
  advance(ms: number): void;
}

let dir: string;
let store: TokenStore;
let service: TokenService;
const opened: RateLimiter[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-sign-in-'));
  store = new FileTokenStore({ path: path.join(dir, 'tokens.json') });
  service = new TokenService({ store, tiers: ['default'], clock: () => START_MS });
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((limiter) => limiter.close()));
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function build(): Promise<Harness> {
  let nowMs = START_MS;
  const clock = (): number => nowMs;
  let reads = 0;
  const counted: TokenStore = Object.assign(Object.create(store) as TokenStore, {
    findByHash: (hash: string) => {
      reads++;
      return store.findByHash(hash);
    },
  });
  const failures = await createRateLimiter({ policy: { name: 'auth-failures', limit: FAILURES_PER_MINUTE, windowMs: 60_000 }, clock });
  const unauthenticated = await createRateLimiter({ policy: { name: 'unauthenticated', limit: 60, windowMs: 60_000 }, clock });
  opened.push(failures, unauthenticated);
  const app = express();
  app.post(
    '/mcp',
    createAuthMiddleware({
      verifier: new CachedTokenVerifier({ store: counted, ttlMs: TOKEN_CACHE_TTL_MS, clock }),
      authFailureLimiter: failures,
      unauthenticatedLimiter: unauthenticated,
      trustProxyHops: 1,
      requiredScope: 'mcp',
      logger: silentLogger,
      clock,
    }),
    (_req, res) => res.json({ tokenId: (tokenOf(res) as AuthenticatedToken).id }),
  );
  return { app, failures, unauthenticated, lookups: () => reads, advance: (ms) => (nowMs += ms) };
}

async function secrets(count: number): Promise<string[]> {
  const created: string[] = [];
  for (let i = 0; i < count; i++) created.push((await service.create({ name: `agent-${i}` })).secret);
  return created;
}

function call(harness: Harness, secret: string): request.Test {
  return request(harness.app).post('/mcp').set('X-Forwarded-For', ADDRESS).set('Authorization', `Bearer ${secret}`).send({});
}

async function statusesOf(harness: Harness, tokens: readonly string[]): Promise<number[]> {
  const answers = await Promise.all(tokens.map((secret) => call(harness, secret)));
  return answers.map((res) => res.status);
}

const count = (statuses: readonly number[], status: number): number => statuses.filter((s) => s === status).length;

describe('sign-in in parallel: valid callers are never refused for failures nobody made', () => {
  it('40 valid tokens from one address, one call each at once: 40 × 200, each looked up once', async () => {
    const harness = await build();
    const tokens = await secrets(40);
    expect(await statusesOf(harness, tokens)).toEqual(Array(40).fill(200));
    expect(harness.lookups()).toBe(40);
    expect((await harness.failures.consume(authFailureKey(ADDRESS), { cost: 0 })).remaining).toBe(FAILURES_PER_MINUTE);
  });

  it('the same 40 at once again after their cache entries expired: 40 × 200, looked up again', async () => {
    const harness = await build();
    const tokens = await secrets(40);
    expect(await statusesOf(harness, tokens)).toEqual(Array(40).fill(200));
    harness.advance(TOKEN_CACHE_TTL_MS + 1);
    expect(await statusesOf(harness, tokens)).toEqual(Array(40).fill(200));
    expect(harness.lookups()).toBe(80);
  });

  it('tokens already verified pass while 40 first sign-ins of their address hold the whole budget', async () => {
    const harness = await build();
    const known = await secrets(5);
    expect(await statusesOf(harness, known)).toEqual(Array(5).fill(200));
    const fresh = await secrets(40);
    expect(await statusesOf(harness, [...fresh, ...known, ...known])).toEqual(Array(50).fill(200));
  });

  it('one token, 30 parallel first calls: 30 × 200 and one lookup', async () => {
    const harness = await build();
    const [secret] = await secrets(1);
    expect(await statusesOf(harness, Array(30).fill(secret))).toEqual(Array(30).fill(200));
    expect(harness.lookups()).toBe(1);
  });

  it('valid tokens among a few wrong ones (fewer than the budget) all pass', async () => {
    const harness = await build();
    const tokens = await secrets(30);
    const wrong = Array.from({ length: FAILURES_PER_MINUTE - 1 }, () => generateToken().secret);
    const statuses = await statusesOf(harness, [...wrong, ...tokens]);
    expect(statuses.slice(wrong.length)).toEqual(Array(30).fill(200));
    expect(count(statuses, 401)).toBe(wrong.length);
  });
});

describe('sign-in in parallel: guessing stays bounded', () => {
  it(`200 made-up secrets from one address at once: at most ${FAILURES_PER_MINUTE} looked up, the rest 429; then a bad secret and a valid token are refused 429`, async () => {
    const harness = await build();
    const [valid] = await secrets(1);
    const statuses = await statusesOf(harness, Array.from({ length: 200 }, () => generateToken().secret));
    expect(harness.lookups()).toBeLessThanOrEqual(FAILURES_PER_MINUTE);
    expect(count(statuses, 401)).toBe(FAILURES_PER_MINUTE);
    expect(count(statuses, 429)).toBe(200 - FAILURES_PER_MINUTE);
    const lookupsAfterBurst = harness.lookups();
    const bad = await call(harness, generateToken().secret);
    expect(bad.status).toBe(429);
    expect(bad.body.error.message).toContain('Too many failed authentication attempts from this address');
    expect((await call(harness, valid as string)).status).toBe(429);
    expect(harness.lookups()).toBe(lookupsAfterBurst);
  });

  it('200 made-up secrets and 20 valid tokens at once: no more lookups of made-up secrets than the budget', async () => {
    const harness = await build();
    const tokens = await secrets(20);
    const guesses = Array.from({ length: 200 }, () => generateToken().secret);
    const mixed = guesses.flatMap((guess, i) => (i % 10 === 0 && tokens[i / 10] !== undefined ? [tokens[i / 10] as string, guess] : [guess]));
    const statuses = await statusesOf(harness, mixed);
    expect(harness.lookups()).toBeLessThanOrEqual(FAILURES_PER_MINUTE + tokens.length);
    expect(count(statuses, 401)).toBe(FAILURES_PER_MINUTE);
  });
});
