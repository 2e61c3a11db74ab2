import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { silentLogger } from '../../src/shared/logger';
import { buildService, type Service } from '../../src/service/build-service';
import { generateToken } from '../../src/tokens/token-secret';
import { TokenService } from '../../src/tokens/token-service';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/**
 * The failed sign-in budget through the whole service on a real redis-server
 * that goes away, fail-closed: its 503 gives the same retry hint as the
 * per-token limiter's (the next probe of the backend, not a fixed 1 s), and
 * it reports the limiter's series under its own names. Issue 19 item 6.
 */
const PROBE_INTERVAL_MS = 5_000;

let dir: string;
let redis: RedisServer;
let service: Service | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-sign-in-outage-'));
  redis = await startRedisServer();
});
afterEach(async () => {
  await service?.release();
  service = undefined;
});
afterAll(async () => {
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

async function start(env: NodeJS.ProcessEnv): Promise<Service> {
  service = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, `tokens-${Date.now()}.json`), ...env }), { logger: silentLogger });
  return service;
}

function call(app: Service['app'], secret: string) {
  return request(app)
    .post('/mcp')
    .set('Accept', 'application/json, text/event-stream')
    .set('Authorization', `Bearer ${secret}`)
    .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
}

/** One series' value from the exposition text; undefined when absent. */
async function seriesValue(svc: Service, series: string): Promise<number | undefined> {
  const text = await svc.metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('fail-closed with Redis down: a refused sign-in and a refused call give the same Retry-After, the time to the next probe', async () => {
  const svc = await start({
    RATE_LIMIT_BACKEND: 'redis',
    REDIS_URL: redis.url,
    RATE_LIMIT_FAILURE_POLICY: 'fail-closed',
    RATE_LIMIT_TIMEOUT_MS: '200',
    RATE_LIMIT_PROBE_INTERVAL_MS: String(PROBE_INTERVAL_MS),
  });
  const { secret } = await new TokenService({ store: svc.tokenStore, tiers: ['default'] }).create({ name: 'known' });
  expect((await call(svc.app, secret)).status).toBe(200);

  await redis.stop();
  try {
    // Known token: the sign-in budget cannot be read (never "spent" in an outage), the per-token limit refuses.
    const limited = await call(svc.app, secret);
    // A token not seen yet: nothing can be reserved for it.
    const signIn = await call(svc.app, generateToken().secret);
    expect(limited.status).toBe(503);
    expect(signIn.status).toBe(503);
    const limiterHint = Number(limited.headers['retry-after']);
    const signInHint = Number(signIn.headers['retry-after']);
    expect(limiterHint).toBeGreaterThan(1);
    expect(limiterHint).toBeLessThanOrEqual(PROBE_INTERVAL_MS / 1000);
    expect(Math.abs(signInHint - limiterHint)).toBeLessThanOrEqual(1);
    expect(signIn.body.error.data).toEqual({ reason: 'backend_unavailable', retryAfterSeconds: signInHint });
    expect(signIn.body.error.message).toContain(`retry after ${signInHint} s`);

    // The sign-in limiter's refusals and decisions are its own series...
    expect(await seriesValue(svc, 'firelimit_sign_in_outage_refusals_total{backend="redis"}')).toBeGreaterThanOrEqual(1);
    expect(await seriesValue(svc, 'firelimit_sign_in_decisions_total{result="unavailable",source="local"}')).toBeGreaterThanOrEqual(1);
    // ...but the outage is the one store's: one guard for every limit on it, one outage counted once (ADR 0047).
    expect(await seriesValue(svc, 'firelimit_backend_outages_total{backend="redis"}')).toBe(1);
    expect(await seriesValue(svc, 'firelimit_backend_outage_active{backend="redis"}')).toBe(1);
  } finally {
    await redis.restart();
  }
});

test('the sign-in limiter reports its decisions beside the per-token limiter, each in its own series', async () => {
  const svc = await start({ AUTH_FAILURES_PER_MINUTE: '5' });
  const { secret } = await new TokenService({ store: svc.tokenStore, tiers: ['default'] }).create({ name: 'known' });
  expect((await call(svc.app, secret)).status).toBe(200);
  expect((await call(svc.app, generateToken().secret)).status).toBe(401);
  // A first sign-in reserves (allowed); a failure also charges the failures-only key (allowed).
  expect(await seriesValue(svc, 'firelimit_sign_in_decisions_total{result="allowed",source="local"}')).toBe(3);
  expect(await seriesValue(svc, 'firelimit_decisions_total{result="allowed",source="local"}')).toBe(1);
  expect(await seriesValue(svc, 'firelimit_sign_in_waits_total')).toBe(0);

  // 20 first sign-ins at once from one address, past the budget of 5: all get in, and the waits are counted.
  const tokens = new TokenService({ store: svc.tokenStore, tiers: ['default'] });
  const secrets: string[] = [];
  for (let i = 0; i < 20; i++) secrets.push((await tokens.create({ name: `agent-${i}` })).secret);
  const answers = await Promise.all(secrets.map((s) => call(svc.app, s)));
  expect(answers.map((res) => res.status)).toEqual(Array(20).fill(200));
  expect(await seriesValue(svc, 'firelimit_sign_in_waits_total')).toBeGreaterThan(0);
});

test('fail-open with Redis frozen (SIGSTOP): 40 valid first sign-ins from one address at once still get 40 × 200, and 30 made-up secrets no more than the budget', async () => {
  const svc = await start({
    RATE_LIMIT_BACKEND: 'redis',
    REDIS_URL: redis.url,
    RATE_LIMIT_FAILURE_POLICY: 'fail-open',
    RATE_LIMIT_TIMEOUT_MS: '200',
    AUTH_FAILURES_PER_MINUTE: '10',
  });
  const tokens = new TokenService({ store: svc.tokenStore, tiers: ['default'] });
  const secrets: string[] = [];
  for (let i = 0; i < 40; i++) secrets.push((await tokens.create({ name: `agent-${i}` })).secret);
  redis.suspend();
  try {
    const answers = await Promise.all(secrets.map((secret) => call(svc.app, secret)));
    expect(answers.map((res) => res.status)).toEqual(Array(40).fill(200));
    const guesses = await Promise.all(Array.from({ length: 30 }, () => call(svc.app, generateToken().secret)));
    expect(guesses.filter((res) => res.status === 401).length).toBeLessThanOrEqual(10);
    expect(guesses.filter((res) => res.status === 429).length).toBeGreaterThanOrEqual(20);
  } finally {
    redis.resume();
  }
});
