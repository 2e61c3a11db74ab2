import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import { OutageGuard } from '../../src/library/limiter/outage-guard';
import { WindowRateLimiter, type FailurePolicy } from '../../src/library/limiter/rate-limiter';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import {
  DEADLINE_MS,
  events,
  expectFailClosedRefusals,
  expectHealthy,
  expectHungWithoutWaits,
  expectOneOutage,
  MARGIN_MS,
  PROBE_INTERVAL_MS,
  startOutageApp,
  trafficFor,
  trafficUntilShared,
  type LimiterFactoryParts,
  type OutageApp,
} from '../support/outage-scenarios';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/**
 * Outages of the Redis backend seen over HTTP, against a real redis-server.
 *
 * "Back" for the restart case is measured from the moment the limiter's own
 * Redis client is ready again: how soon it reconnects is the client's backoff
 * (up to 2 s), outside the outage guard; what the guard owes is to notice
 * within one probe interval once Redis answers.
 */

const policy = { name: 'default', limit: 100_000, windowMs: 60_000 };
const figures: Record<string, number> = {};

let redis: RedisServer;
const outageApps: OutageApp[] = [];

beforeAll(async () => {
  // With a password, so the last test can check it never reaches a log line.
  redis = await startRedisServer({ password: 's3cret-outage-pw' });
});

afterEach(async () => {
  redis.resume();
  await Promise.all(outageApps.splice(0).map((a) => a.close()));
});

afterAll(async () => {
  await redis?.close();
  console.info(`outage-redis figures (ms): ${JSON.stringify(figures)}`);
});

async function viaCreateRateLimiter(failurePolicy: FailurePolicy): Promise<OutageApp> {
  const app = await startOutageApp(failurePolicy, ({ logger, metrics }) =>
    createRateLimiter({
      store: new RedisWindowStore({ url: redis.url, commandTimeoutMs: DEADLINE_MS, logger }),
      policy,
      timeoutMs: DEADLINE_MS,
      probeIntervalMs: PROBE_INTERVAL_MS,
      failurePolicy,
      logger,
      events: metrics,
    }),
  );
  outageApps.push(app);
  await waitUntilShared(app);
  return app;
}

/** The same parts createRateLimiter assembles, keeping a handle on the store to see its client reconnect. */
async function fromParts(failurePolicy: FailurePolicy): Promise<{ app: OutageApp; store: RedisWindowStore }> {
  let store: RedisWindowStore | undefined;
  const app = await startOutageApp(failurePolicy, async ({ logger, metrics }: LimiterFactoryParts) => {
    store = new RedisWindowStore({ url: redis.url, commandTimeoutMs: DEADLINE_MS, logger });
    const clock = Date.now;
    const guard = new OutageGuard({ backend: 'redis', timeoutMs: DEADLINE_MS, probeIntervalMs: PROBE_INTERVAL_MS, logger, clock, metrics });
    return new WindowRateLimiter({ store, guard, policies: [policy], failurePolicy, clock, logger, events: metrics });
  });
  outageApps.push(app);
  if (store === undefined) throw new Error('store not built');
  expect(await store.whenReady(5_000)).toBe(true);
  return { app, store };
}

/** The client connects in the background; the scenarios start from a connected limiter. */
async function waitUntilShared(app: OutageApp): Promise<void> {
  const { sharedAfterMs } = await trafficUntilShared(app, performance.now(), 5_000, 20);
  expect(sharedAfterMs).toBeDefined();
  // A call made before the client had connected may itself have opened (and closed) an outage; count from here.
  await app.startCounting('redis');
}

describe('Redis outage over HTTP', () => {
  it('fail-open: stopped mid-traffic then restarted: no 5xx, local while down, shared again within a probe interval, one line each way', async () => {
    const { app, store } = await fromParts('fail-open');
    await expectHealthy(app);

    await redis.stop();
    const during = await trafficFor(app, 2_000);
    expect(during.every((h) => h.status === 200)).toBe(true);
    expect(during.every((h) => h.shared === false && h.reason === 'local_fallback')).toBe(true);
    expect(during.every((h) => h.elapsedMs < DEADLINE_MS + MARGIN_MS)).toBe(true);

    const restartedAt = performance.now();
    await redis.restart();
    expect(await store.whenReady(5_000)).toBe(true);
    const readyAt = performance.now();
    const { hits, sharedAfterMs } = await trafficUntilShared(app, readyAt, PROBE_INTERVAL_MS + 1_000 + MARGIN_MS);
    figures.fail_open_ready_after_restart = readyAt - restartedAt;
    figures.fail_open_shared_after_ready = sharedAfterMs ?? Number.NaN;
    expect(hits.every((h) => h.status === 200)).toBe(true);
    expect(sharedAfterMs).toBeDefined();
    expect(sharedAfterMs).toBeLessThanOrEqual(PROBE_INTERVAL_MS + 1_000);

    await expectHealthy(app, 3);
    await expectOneOutage(app, 'redis');
  });

  it('fail-open: hung (SIGSTOP): the first request waits at most the deadline, the following ones do not wait', async () => {
    const app = await viaCreateRateLimiter('fail-open');
    await expectHealthy(app);

    await expectHungWithoutWaits(app, figures, () => redis.suspend(), () => redis.resume());
    const { sharedAfterMs } = await trafficUntilShared(app, performance.now(), PROBE_INTERVAL_MS + 1_000 + MARGIN_MS);
    figures.hung_shared_after_resume = sharedAfterMs ?? Number.NaN;
    expect(sharedAfterMs).toBeDefined();
    expect(sharedAfterMs).toBeLessThanOrEqual(PROBE_INTERVAL_MS + 1_000);
    await expectOneOutage(app, 'redis');
  });

  it('fail-closed: 503 with Retry-After and reason backend_unavailable while down, counted as refusals, not as rate-limit hits', async () => {
    const app = await viaCreateRateLimiter('fail-closed');
    await expectHealthy(app);

    await expectFailClosedRefusals(app, 'redis', () => redis.stop());

    await redis.restart();
    const { hits, sharedAfterMs } = await trafficUntilShared(app, performance.now(), 5_000);
    expect(sharedAfterMs).toBeDefined();
    expect(hits.at(-1)).toMatchObject({ status: 200, shared: true });
    await expectOneOutage(app, 'redis');
    // The URL carries a password; neither the outage lines nor anything else logged may show it.
    expect(events(app.logger.entries, 'ratelimit.outage_started')[0]?.fields.error).toBeDefined();
    expect(JSON.stringify(app.logger.entries)).not.toContain('s3cret-outage-pw');
  });
});
