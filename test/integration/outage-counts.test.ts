import { getDatabase } from 'firebase-admin/database';
import type { App } from 'firebase-admin/app';
import { startDelayProxy, type DelayProxy } from '../../bench/delay-proxy';
import { ALGORITHM_NAMES } from '../../src/library/window/algorithms';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { COUNT_DEADLINE_MS, COUNT_LIMIT, COUNT_PROBE_INTERVAL_MS, countPolicy, countThroughHiccup } from '../support/outage-counts';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { startRtdbTestServer, type RtdbTestServer } from '../support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';

/**
 * Issue 19 item 4: after a 3 s freeze (SIGSTOP), a slowdown past the
 * deadline or a restart, a token is admitted exactly its figure over the
 * window, on every algorithm, on Redis and on RTDB. Before ADR 0046 the calls
 * the limiter gave up on landed on the store later and were written back as
 * well: Redis held 11 for 8 admitted.
 */

jest.setTimeout(60_000);

const algorithms = ALGORITHM_NAMES.map((algorithm) => [algorithm] as const);
// Inside one window whatever the real time, so the only thing that counts is the hiccup.
const nowMs = (Math.floor(Date.now() / 60_000) + 2) * 60_000 + 1_000;
const clock = () => nowMs;
let keySeq = 0;
const freshKey = () => `tok_counts_${process.pid}_${++keySeq}`;

// One instance per test, whose figure must come out exact: the outage share stays off, because the beat of an
// earlier test's limiter, closed while its store was unreachable (the proxy's case), counts for a TTL and would
// halve this one's local share (ADR 0067; outage-fleet-share*.test.ts test the share itself).
const common = { timeoutMs: COUNT_DEADLINE_MS, probeIntervalMs: COUNT_PROBE_INTERVAL_MS, clock, outageShare: 'instance' } as const;

describe('Redis: counts stay true after a hiccup', () => {
  let redis: RedisServer;
  const limiters: RateLimiter[] = [];
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterEach(async () => {
    redis.resume();
    await Promise.all(limiters.splice(0).map((l) => l.close()));
  });
  afterAll(async () => redis?.close());

  async function limiterOn(url: string, algorithm: (typeof ALGORITHM_NAMES)[number]): Promise<RateLimiter> {
    const limiter = await createRateLimiter({ ...common, policy: countPolicy(algorithm), store: new RedisWindowStore({ url, commandTimeoutMs: COUNT_DEADLINE_MS }) });
    limiters.push(limiter);
    expect(await limiter.whenReady(5_000)).toBe(true);
    return limiter;
  }

  test.each(algorithms)('%s: frozen 3 s (SIGSTOP): admitted exactly its figure, never refused with remaining > 0', async (algorithm) => {
    const limiter = await limiterOn(redis.url, algorithm);
    const outcome = await countThroughHiccup({ limiter, key: freshKey(), hiccup: async () => redis.suspend(), mend: async () => redis.resume() });
    expect(outcome.localDecisions).toBeGreaterThan(0);
    expect(outcome).toMatchObject({ admitted: COUNT_LIMIT, refusedWithRemaining: 0 });
  });

  test.each(algorithms)('%s: frozen, then restarted empty: admitted exactly its figure', async (algorithm) => {
    const limiter = await limiterOn(redis.url, algorithm);
    const outcome = await countThroughHiccup({ limiter, key: freshKey(), hiccupMs: 1_500, hiccup: async () => redis.suspend(), mend: () => redis.restart() });
    expect(outcome).toMatchObject({ admitted: COUNT_LIMIT, refusedWithRemaining: 0 });
  });

  test.each(algorithms)('%s: every reply slower than the deadline for 3 s (a delaying proxy): admitted exactly its figure', async (algorithm) => {
    // The proxy relays at once until told to slow down: then every command lands, each after the limiter gave up on it.
    let proxy: DelayProxy | undefined;
    const slow = { delayMs: 0 };
    proxy = await startDelayProxy(redis.port, slow);
    try {
      const limiter = await limiterOn(`redis://127.0.0.1:${proxy.port}`, algorithm);
      const outcome = await countThroughHiccup({
        limiter,
        key: freshKey(),
        hiccup: async () => {
          slow.delayMs = COUNT_DEADLINE_MS + 150;
        },
        mend: async () => {
          slow.delayMs = 0;
        },
      });
      expect(outcome.localDecisions).toBeGreaterThan(0);
      expect(outcome).toMatchObject({ admitted: COUNT_LIMIT, refusedWithRemaining: 0 });
    } finally {
      await proxy?.close();
      proxy = undefined;
    }
  });
});

describe('RTDB: counts stay true after a hiccup', () => {
  let server: RtdbTestServer;
  const apps: App[] = [];
  const limiters: RateLimiter[] = [];
  beforeAll(async () => {
    server = await startRtdbTestServer();
  });
  afterEach(async () => {
    await server.resume().catch(() => undefined);
    await Promise.all(limiters.splice(0).map((l) => l.close()));
    await Promise.all(apps.splice(0).map((a) => deleteAdminApp(a)));
  });
  afterAll(async () => server?.close());

  async function limiterOn(algorithm: (typeof ALGORITHM_NAMES)[number]): Promise<RateLimiter> {
    const app = createAdminApp(server);
    apps.push(app);
    const store = new RtdbWindowStore({ database: getDatabase(app), rootPath: 'rateLimits', clock });
    const limiter = await createRateLimiter({ ...common, policy: countPolicy(algorithm), store });
    limiters.push(limiter);
    expect(await limiter.whenReady(5_000)).toBe(true);
    return limiter;
  }

  test.each(algorithms)('%s: frozen 3 s (SIGSTOP): admitted exactly its figure, never refused with remaining > 0', async (algorithm) => {
    const limiter = await limiterOn(algorithm);
    const outcome = await countThroughHiccup({ limiter, key: freshKey(), hiccup: () => server.suspend(), mend: () => server.resume() });
    expect(outcome.localDecisions).toBeGreaterThan(0);
    expect(outcome).toMatchObject({ admitted: COUNT_LIMIT, refusedWithRemaining: 0 });
  });

  test.each(algorithms)('%s: frozen, then restarted empty: admitted exactly its figure', async (algorithm) => {
    const limiter = await limiterOn(algorithm);
    const outcome = await countThroughHiccup({ limiter, key: freshKey(), hiccupMs: 1_500, hiccup: () => server.suspend(), mend: () => server.restart() });
    expect(outcome).toMatchObject({ admitted: COUNT_LIMIT, refusedWithRemaining: 0 });
  });
});
