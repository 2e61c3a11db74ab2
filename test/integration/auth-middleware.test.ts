import express, { type Express } from 'express';
import request from 'supertest';
import { authFailureKey, createAuthMiddleware } from '../../src/http/auth-middleware';
import { SignInBudget, type SignInVerdict } from '../../src/http/sign-in-budget';
import { tokenOf } from '../../src/http/request-locals';
import { createRateLimitMiddleware } from '../../src/library/express/rate-limit-middleware';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { createCapturingLogger } from '../support/capturing-logger';
import type { AuthenticatedToken, TokenStore, TokenVerifier } from '../../src/tokens/token-record';
import { CachedTokenVerifier } from '../../src/tokens/cached-token-verifier';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { generateToken } from '../../src/tokens/token-secret';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const FAILURES_PER_MINUTE = 3;
const UNAUTHENTICATED_PER_MINUTE = 20;
// 10 s into a minute window, so the window ends 50 s later.
const NOW_MS = 1_700_000_050_000;

interface Harness {
  app: Express;
  limiter: RateLimiter;
  unauthenticated: RateLimiter;
  logger: ReturnType<typeof createCapturingLogger>;
  good: string;
  noScope: string;
  revoked: string;
  store: TokenStore;
  verifications: () => number;
}

let dir: string;
let harness: Harness;

async function build(options: { verifier?: TokenVerifier } = {}): Promise<Harness> {
  const store = new FileTokenStore({ path: path.join(dir, 'tokens.json') });
  const service = new TokenService({ store, tiers: ['default'], clock: () => NOW_MS });
  const good = (await service.create({ name: 'good' })).secret;
  const noScope = (await service.create({ name: 'no-scope', scopes: ['other'] })).secret;
  const revokedToken = await service.create({ name: 'revoked' });
  await service.revoke(revokedToken.token.id);

  const cached = new CachedTokenVerifier({ store, clock: () => NOW_MS });
  let calls = 0;
  const counting: TokenVerifier = {
    verify: (secret) => {
      calls++;
      return (options.verifier ?? cached).verify(secret);
    },
    peek: (secret) => (options.verifier ?? cached).peek(secret),
  };
  const limiter = await createRateLimiter({
    policy: { name: 'auth-failures', limit: FAILURES_PER_MINUTE, windowMs: 60_000 },
    clock: () => NOW_MS,
  });
  const unauthenticated = await createRateLimiter({
    policy: { name: 'unauthenticated', limit: UNAUTHENTICATED_PER_MINUTE, windowMs: 60_000 },
    clock: () => NOW_MS,
  });
  const logger = createCapturingLogger();
  const app = express();
  app.use(express.json());
  app.post(
    '/mcp',
    createAuthMiddleware({ verifier: counting, authFailureLimiter: limiter, unauthenticatedLimiter: unauthenticated, trustProxyHops: 1, requiredScope: 'mcp', logger, clock: () => NOW_MS }),
    (_req, res) => {
      const token = tokenOf(res) as AuthenticatedToken;
      res.json({ ok: true, tokenId: token.id, tier: token.tier });
    },
  );
  return { app, limiter, unauthenticated, logger, good, noScope, revoked: revokedToken.secret, store, verifications: () => calls };
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-auth-'));
  harness = await build();
});
afterEach(async () => {
  await harness.limiter.close();
  await harness.unauthenticated.close();
  await rm(dir, { recursive: true, force: true });
});

const rpc = { jsonrpc: '2.0', id: 7, method: 'tools/list' };

function call(token: string | undefined, from = '203.0.113.7', body: unknown = rpc) {
  const req = request(harness.app).post('/mcp').set('X-Forwarded-For', from).send(body as object);
  return token === undefined ? req : req.set('Authorization', `Bearer ${token}`);
}

describe('auth middleware: 401', () => {
  it('answers a request without credentials with 401, a plain Bearer challenge and a JSON-RPC error carrying the id', async () => {
    const res = await call(undefined);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="firelimit"');
    expect(res.body).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32001, message: expect.any(String), data: { reason: 'missing_token' } } });
  });

  it.each([
    ['a malformed token', 'not-a-token', 'malformed_token'],
    ['an unknown token', generateToken().secret, 'invalid_token'],
  ])('answers %s with 401 and error="invalid_token"', async (_name, token, reason) => {
    const res = await call(token);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="firelimit", error="invalid_token"');
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32001, data: { reason } } });
  });

  it('answers a revoked token with 401 like an unknown one', async () => {
    const res = await call(harness.revoked);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    expect(res.body.error.data).toEqual({ reason: 'invalid_token' });
  });

  it('answers another scheme (Basic) as a malformed credential', async () => {
    const res = await request(harness.app).post('/mcp').set('Authorization', 'Basic dXNlcjpwYXNz').send(rpc);
    expect(res.status).toBe(401);
    expect(res.body.error.data).toEqual({ reason: 'malformed_token' });
  });

  it('uses a null id when the body is not a single JSON-RPC request', async () => {
    const res = await call('bad', '203.0.113.7', [rpc, rpc]);
    expect(res.status).toBe(401);
    expect(res.body.id).toBeNull();
  });
});

describe('auth middleware: 403 and success', () => {
  it('answers a valid token without the required scope with 403 insufficient_scope', async () => {
    const res = await call(harness.noScope);
    expect(res.status).toBe(403);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="firelimit", error="insufficient_scope", scope="mcp"');
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32003, data: { reason: 'insufficient_scope', requiredScope: 'mcp' } } });
  });

  it('lets a valid token through with res.locals.token set', async () => {
    const res = await call(harness.good);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, tokenId: expect.stringMatching(/^tok_/), tier: 'default' });
  });

  it('accepts the scheme in any case', async () => {
    const res = await request(harness.app).post('/mcp').set('Authorization', `bearer ${harness.good}`).send(rpc);
    expect(res.status).toBe(200);
  });

  it('does not count successes or scope refusals against the address', async () => {
    for (let i = 0; i < FAILURES_PER_MINUTE + 2; i++) {
      expect((await call(harness.good)).status).toBe(200);
      expect((await call(harness.noScope)).status).toBe(403);
      expect((await call(undefined)).status).toBe(401);
    }
    expect((await harness.limiter.consume(authFailureKey('203.0.113.7'), { cost: 0 })).remaining).toBe(FAILURES_PER_MINUTE);
  });
});

describe('auth middleware: failed attempts are limited per address', () => {
  it(`answers 429 with Retry-After and the auth-failure headers after ${FAILURES_PER_MINUTE} failures, before looking the token up`, async () => {
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) expect((await call('bad-token')).status).toBe(401);
    const lookupsBefore = harness.verifications();
    const res = await call(generateToken().secret);
    expect(res.status).toBe(429);
    expect(harness.verifications()).toBe(lookupsBefore);
    expect(res.headers['retry-after']).toBe('50'); // the window ends 50 s after NOW_MS
    expect(res.headers['x-ratelimit-limit']).toBe(String(FAILURES_PER_MINUTE));
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    expect(res.headers['ratelimit-policy']).toBe(`"auth-failures";q=${FAILURES_PER_MINUTE};w=60`);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32029, data: { reason: 'auth_failures', retryAfterSeconds: 50 } } });
    expect(res.body.error.message).toContain('50 s');
  });

  it('refuses even a valid token from a blocked address, without verifying it', async () => {
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) await call('bad-token');
    const lookupsBefore = harness.verifications();
    expect((await call(harness.good)).status).toBe(429);
    expect(harness.verifications()).toBe(lookupsBefore);
  });

  it('ignores spoofed left-most X-Forwarded-For entries: rotating them does not dodge the limit', async () => {
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) {
      expect((await call('bad-token', `198.51.100.${i}, 203.0.113.7`)).status).toBe(401);
    }
    expect((await call('bad-token', '198.51.100.99, 203.0.113.7')).status).toBe(429);
  });

  it('counts an IPv6 /64 as one address, so rotating the interface id does not dodge the limit', async () => {
    for (let i = 1; i <= FAILURES_PER_MINUTE; i++) expect((await call('bad-token', `2001:db8:1:2::${i}`)).status).toBe(401);
    expect((await call('bad-token', '2001:db8:1:2:ffff::1')).status).toBe(429);
  });

  it('keeps other addresses unaffected', async () => {
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) await call('bad-token', '203.0.113.7');
    expect((await call(harness.good, '203.0.113.8')).status).toBe(200);
    expect((await call('bad-token', '203.0.113.8')).status).toBe(401);
  });
});

describe('auth middleware before the per-token limiter', () => {
  it('answers a bad token 401 (not 429) when the per-token limit is spent, and never touches a per-token counter', async () => {
    const perToken = await createRateLimiter({ policy: { name: 'default', limit: 1, windowMs: 60_000 }, clock: () => NOW_MS });
    const keys: string[] = [];
    const app = express();
    app.use(express.json());
    app.post(
      '/mcp',
      createAuthMiddleware({ verifier: new CachedTokenVerifier({ store: harness.store }), authFailureLimiter: harness.limiter, unauthenticatedLimiter: harness.unauthenticated, trustProxyHops: 1, requiredScope: 'mcp', logger: harness.logger }),
      createRateLimitMiddleware({ limiter: perToken, key: (_req, res) => { const id = (tokenOf(res) as AuthenticatedToken).id; keys.push(id); return id; } }),
      (_req, res) => res.json({ ok: true }),
    );
    const send = (token: string) => request(app).post('/mcp').set('X-Forwarded-For', '192.0.2.1').set('Authorization', `Bearer ${token}`).send(rpc);
    expect((await send(harness.good)).status).toBe(200);
    expect((await send(harness.good)).status).toBe(429);
    const bad = await send(generateToken().secret);
    expect(bad.status).toBe(401);
    expect(keys).toHaveLength(2);
    await perToken.close();
  });
});

describe('auth middleware: store failures and logs', () => {
  it('answers 503 with Retry-After when the token store fails, and does not count it as a failure', async () => {
    const failing = new CachedTokenVerifier({
      store: { findByHash: () => Promise.reject(new Error('unavailable')) } as unknown as TokenStore,
    });
    await harness.limiter.close();
    harness = await build({ verifier: failing });
    for (let i = 0; i < FAILURES_PER_MINUTE + 1; i++) {
      const res = await call(harness.good);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32053 } });
    }
  });

  it('logs failed attempts by address and reason, and never the header, the token or its hash', async () => {
    const unknown = generateToken();
    await call(unknown.secret);
    await call('malformed-secret-value-xyz');
    await call(harness.good);
    const logged = JSON.stringify(harness.logger.entries);
    expect(harness.logger.entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ message: 'authentication failed', fields: expect.objectContaining({ address: '203.0.113.7', reason: 'invalid_token' }) }),
        expect.objectContaining({ fields: expect.objectContaining({ reason: 'malformed_token' }) }),
      ]),
    );
    for (const secret of [unknown.secret, unknown.secretHash, harness.good, 'malformed-secret-value-xyz', 'Bearer']) expect(logged).not.toContain(secret);
  });
});

describe('auth middleware: a failed sign-in is reserved before the secret is checked', () => {
  it('a parallel burst of 200 guesses verifies no more secrets than the budget holds, and a valid token inside it is no exception', async () => {
    const guesses = Array.from({ length: 200 }, (_, i) => (i === 100 ? harness.good : generateToken().secret));
    const answers = await Promise.all(guesses.map((secret) => call(secret)));
    const statuses = answers.map((res) => res.status);
    expect(harness.verifications()).toBeLessThanOrEqual(FAILURES_PER_MINUTE);
    expect(statuses.filter((s) => s === 401 || s === 200).length).toBeLessThanOrEqual(FAILURES_PER_MINUTE);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(200 - FAILURES_PER_MINUTE);
  });

  it('a valid token that had to be looked up gets its reservation back', async () => {
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) expect((await call(generateToken().secret, `198.51.100.${i + 1}`)).status).toBe(401);
    expect((await call(harness.good)).status).toBe(200);
    expect((await harness.limiter.consume(authFailureKey('203.0.113.7'), { cost: 0 })).remaining).toBe(FAILURES_PER_MINUTE);
    expect((await harness.unauthenticated.consume(authFailureKey('203.0.113.7'), { cost: 0 })).remaining).toBe(UNAUTHENTICATED_PER_MINUTE);
  });

  it('repeating one wrong secret (a client reconnecting with a revoked token) is charged once, not per attempt', async () => {
    for (let i = 0; i < FAILURES_PER_MINUTE * 3; i++) expect((await call(harness.revoked)).status).toBe(401);
    expect((await harness.limiter.consume(authFailureKey('203.0.113.7'), { cost: 0 })).remaining).toBe(FAILURES_PER_MINUTE - 1);
    expect(harness.verifications()).toBe(1);
  });

  it('a repeated wrong secret from an address whose budget is spent is refused 429 too', async () => {
    const stale = generateToken().secret;
    expect((await call(stale)).status).toBe(401);
    for (let i = 1; i < FAILURES_PER_MINUTE; i++) await call(generateToken().secret);
    expect((await call(stale)).status).toBe(429);
  });

  it('a store failure gives the reservation back, so an outage of the token store locks nobody out', async () => {
    const failing: TokenVerifier = {
      verify: () => Promise.reject(new Error('unavailable')),
      peek: () => ({ kind: 'unknown' }),
    };
    await harness.limiter.close();
    harness = await build({ verifier: failing });
    for (let i = 0; i < FAILURES_PER_MINUTE * 2; i++) expect((await call(generateToken().secret)).status).toBe(503);
    expect((await harness.limiter.consume(authFailureKey('203.0.113.7'), { cost: 0 })).remaining).toBe(FAILURES_PER_MINUTE);
  });
});

describe('auth middleware: requests without a known-valid token are limited per address on this instance', () => {
  it(`answers the ${UNAUTHENTICATED_PER_MINUTE + 1}th request without a token 429 unauthenticated_limit, with Retry-After`, async () => {
    for (let i = 0; i < UNAUTHENTICATED_PER_MINUTE; i++) expect((await call(undefined)).status).toBe(401);
    const res = await call(undefined);
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('50');
    expect(res.body).toMatchObject({ error: { code: -32029, data: { reason: 'unauthenticated_limit', limit: UNAUTHENTICATED_PER_MINUTE } } });
  });

  it('lets a token this instance already verified through an address that is flooding without one', async () => {
    expect((await call(harness.good)).status).toBe(200);
    for (let i = 0; i < UNAUTHENTICATED_PER_MINUTE + 5; i++) await call(undefined);
    expect((await call(harness.good)).status).toBe(200);
  });

  it('never blocks the first sign-in of a valid token: a flood without tokens from a shared address (a NAT) spends only its own budget', async () => {
    for (let i = 0; i < UNAUTHENTICATED_PER_MINUTE + 5; i++) await call(undefined);
    expect((await call(undefined)).status).toBe(429);
    expect((await call(harness.good)).status).toBe(200);
  });

  it('does not spend it on a secret not seen yet: the failed sign-in reservation bounds those', async () => {
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) await call(generateToken().secret);
    expect((await harness.unauthenticated.consume(authFailureKey('203.0.113.7'), { cost: 0 })).remaining).toBe(UNAUTHENTICATED_PER_MINUTE);
  });

  it('counts repeated wrong secrets against it, so replaying one bad secret is bounded too', async () => {
    // The first is a secret not seen yet (a failed sign-in); the repeats spend the unauthenticated budget.
    for (let i = 0; i <= UNAUTHENTICATED_PER_MINUTE; i++) await call(harness.revoked);
    expect((await call(harness.revoked)).body.error.data.reason).toBe('unauthenticated_limit');
  });
});

describe('auth middleware: token store outage logging', () => {
  it('logs one line when the token store starts failing and one when it answers again, not one per request', async () => {
    let failing = true;
    const cached = new CachedTokenVerifier({ store: harness.store, ttlMs: 0, clock: () => NOW_MS });
    const flaky: TokenVerifier = {
      verify: (secret) => (failing ? Promise.reject(new Error('unavailable')) : cached.verify(secret)),
      peek: () => ({ kind: 'unknown' }),
    };
    await harness.limiter.close();
    harness = await build({ verifier: flaky });
    for (let i = 0; i < 5; i++) expect((await call(harness.good)).status).toBe(503);
    failing = false;
    expect((await call(harness.good)).status).toBe(200);
    const events = harness.logger.entries.map((e) => e.fields.event).filter((e) => typeof e === 'string' && e.startsWith('auth.token_store'));
    expect(events).toEqual(['auth.token_store_unavailable', 'auth.token_store_recovered']);
  });
});

describe('auth middleware: sign-ins held on another instance', () => {
  it('answers 503 sign_in_busy (not a 429 for failures) when another instance holds the whole budget past the wait, and 200 once it lets go', async () => {
    const failures = await createRateLimiter({ policy: { name: 'auth-failures', limit: FAILURES_PER_MINUTE, windowMs: 60_000 }, clock: () => NOW_MS });
    const pending: (() => void)[] = [];
    // Another instance: its sign-ins reserve every unit and stay in flight until the test lets them go.
    const elsewhere = new SignInBudget({ limiter: failures, clock: () => NOW_MS });
    const held = Array.from({ length: FAILURES_PER_MINUTE }, (_, i) =>
      elsewhere.attempt(authFailureKey('203.0.113.7'), `flk_elsewhere_${i}`, () => new Promise<SignInVerdict<string>>((resolve) => pending.push(() => resolve({ kind: 'valid', value: 'x' })))),
    );
    await new Promise((resolve) => setImmediate(resolve));
    const here = new SignInBudget({ limiter: failures, clock: () => NOW_MS, maxWaitMs: 50, pollMs: 25, sleep: () => new Promise((resolve) => setImmediate(resolve)) });
    const app = express();
    app.post(
      '/mcp',
      createAuthMiddleware({ verifier: new CachedTokenVerifier({ store: harness.store, clock: () => NOW_MS }), authFailureLimiter: failures, signInBudget: here, unauthenticatedLimiter: harness.unauthenticated, trustProxyHops: 1, requiredScope: 'mcp', logger: harness.logger, clock: () => NOW_MS }),
      (_req, res) => res.json({ ok: true }),
    );
    const send = () => request(app).post('/mcp').set('X-Forwarded-For', '203.0.113.7').set('Authorization', `Bearer ${harness.good}`).send(rpc);
    const busy = await send();
    expect(busy.status).toBe(503);
    expect(busy.headers['retry-after']).toBe('1');
    expect(busy.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32053, data: { reason: 'sign_in_busy', retryAfterSeconds: 1 } } });
    expect(busy.body.error.message).toContain('being verified at once');
    for (const release of pending) release();
    await Promise.all(held);
    expect((await send()).status).toBe(200);
    await failures.close();
  });
});
