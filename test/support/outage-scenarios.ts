import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import request from 'supertest';
import { createRateLimitMiddleware } from '../../src/library/express/rate-limit-middleware';
import { decisionOf } from '../../src/http/request-locals';
import type { FailurePolicy, RateLimiter } from '../../src/library/limiter/rate-limiter';
import { createCapturingLogger, type CapturedEntry } from './capturing-logger';
import { LimiterMetrics } from '../../src/metrics/limiter-metrics';

/**
 * The HTTP-level outage scenarios of issue 4, written once and run against
 * each real backend (RTDB test server, redis-server). A backend file supplies
 * how to build a limiter on it and how to break and mend it.
 */

export const DEADLINE_MS = 300;
export const PROBE_INTERVAL_MS = 1_000;
/** Scheduling slack on two shared cores, added to every timing bound. */
export const MARGIN_MS = 250;
/** What "a request that does not wait" means here. */
export const NO_WAIT_MS = 100;

export interface LimiterFactoryParts {
  readonly failurePolicy: FailurePolicy;
  readonly logger: ReturnType<typeof createCapturingLogger>;
  readonly metrics: LimiterMetrics;
}

export interface OutageApp {
  readonly logger: ReturnType<typeof createCapturingLogger>;
  readonly metrics: LimiterMetrics;
  readonly limiter: RateLimiter;
  hit(key?: string): Promise<Hit>;
  /** Forgets log lines and outages so far (e.g. one opened while the client was still connecting at startup). */
  startCounting(backend: string): Promise<void>;
  /** Outages counted before startCounting. */
  readonly outagesBefore: number;
  close(): Promise<void>;
}

export interface Hit {
  readonly status: number;
  readonly shared: boolean | undefined;
  readonly reason: string | undefined;
  readonly retryAfter: string | undefined;
  readonly elapsedMs: number;
}

/** An Express app with only the rate-limit middleware in front of a route that echoes the decision. */
export async function startOutageApp(
  failurePolicy: FailurePolicy,
  createLimiter: (parts: LimiterFactoryParts) => Promise<RateLimiter>,
): Promise<OutageApp> {
  const logger = createCapturingLogger();
  const metrics = new LimiterMetrics();
  const limiter = await createLimiter({ failurePolicy, logger, metrics });
  const app = express();
  app.use(createRateLimitMiddleware({ limiter, key: (req) => req.get('x-key') ?? 'tok_outage' }));
  app.get('/work', (_req, res) => {
    const decision = decisionOf(res);
    res.json({ shared: decision?.shared, reason: decision?.reason });
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let outagesBefore = 0;
  return {
    logger,
    metrics,
    limiter,
    get outagesBefore() {
      return outagesBefore;
    },
    async startCounting(backend: string) {
      logger.entries.length = 0;
      outagesBefore = (await seriesValue(metrics, `firelimit_backend_outages_total{backend="${backend}"}`)) ?? 0;
    },
    async hit(key = 'tok_outage') {
      const startedAt = performance.now();
      const res = await request(base).get('/work').set('x-key', key);
      const elapsedMs = performance.now() - startedAt;
      const body = res.body as { shared?: boolean; reason?: string };
      return { status: res.status, shared: body.shared, reason: body.reason, retryAfter: res.headers['retry-after'], elapsedMs };
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await limiter.close();
    },
  };
}

export function events(entries: readonly CapturedEntry[], event: string): CapturedEntry[] {
  return entries.filter((entry) => entry.fields.event === event);
}

/** One series' value from the scrape text, e.g. `firelimit_backend_outages_total{backend="rtdb"}`. */
export async function seriesValue(metrics: LimiterMetrics, series: string): Promise<number | undefined> {
  const line = (await metrics.scrape()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Steady traffic: one request every `everyMs` for `durationMs`. */
export async function trafficFor(app: OutageApp, durationMs: number, everyMs = 50): Promise<Hit[]> {
  const hits: Hit[] = [];
  const endAt = performance.now() + durationMs;
  while (performance.now() < endAt) {
    hits.push(await app.hit());
    await sleep(everyMs);
  }
  return hits;
}

/**
 * Steady traffic until a decision is shared again; returns the hits and how
 * long after `sinceMs` (performance.now()) the first shared one was answered.
 */
export async function trafficUntilShared(
  app: OutageApp,
  sinceMs: number,
  giveUpAfterMs: number,
  everyMs = 50,
): Promise<{ hits: Hit[]; sharedAfterMs: number | undefined }> {
  const hits: Hit[] = [];
  while (performance.now() - sinceMs < giveUpAfterMs) {
    const hit = await app.hit();
    hits.push(hit);
    if (hit.shared === true) return { hits, sharedAfterMs: performance.now() - sinceMs };
    await sleep(everyMs);
  }
  return { hits, sharedAfterMs: undefined };
}

/** Healthy traffic first: every decision shared, so what follows is the outage and nothing else. */
export async function expectHealthy(app: OutageApp, count = 5): Promise<void> {
  for (let i = 0; i < count; i++) {
    const hit = await app.hit();
    expect(hit).toMatchObject({ status: 200, shared: true, reason: 'within_limit' });
  }
}

export async function expectOneOutage(app: OutageApp, backend: string): Promise<void> {
  expect(events(app.logger.entries, 'ratelimit.outage_started')).toHaveLength(1);
  expect(events(app.logger.entries, 'ratelimit.outage_ended')).toHaveLength(1);
  expect(events(app.logger.entries, 'ratelimit.outage_started')[0]?.fields).toMatchObject({ backend });
  expect(await seriesValue(app.metrics, `firelimit_backend_outages_total{backend="${backend}"}`)).toBe(app.outagesBefore + 1);
  expect(await seriesValue(app.metrics, `firelimit_backend_outage_active{backend="${backend}"}`)).toBe(0);
}

/**
 * A hung backend, fail-open: `suspend` it, then the first request waits at
 * most the deadline and the 15 after it (inside one probe interval, so none
 * is a probe) do not wait at all; `resume` it whatever happened. Records
 * hung_first_request and hung_following_max in `figures`.
 */
export async function expectHungWithoutWaits(app: OutageApp, figures: Record<string, number>, suspend: () => unknown, resume: () => unknown): Promise<void> {
  await suspend();
  try {
    const first = await app.hit();
    figures.hung_first_request = first.elapsedMs;
    expect(first).toMatchObject({ status: 200, shared: false, reason: 'local_fallback' });
    expect(first.elapsedMs).toBeLessThanOrEqual(DEADLINE_MS + MARGIN_MS);
    const following = [];
    for (let i = 0; i < 15; i++) following.push(await app.hit());
    figures.hung_following_max = Math.max(...following.map((h) => h.elapsedMs));
    expect(following.every((h) => h.status === 200 && h.shared === false)).toBe(true);
    for (const hit of following) expect(hit.elapsedMs).toBeLessThan(NO_WAIT_MS);
  } finally {
    await resume();
  }
}

/**
 * A backend down, fail-closed: once `stop` resolves, 1.5 s of traffic is all
 * 503 backend_unavailable with a Retry-After within the probe interval, each
 * counted as an outage refusal of `backend` and none as a rate-limit hit.
 */
export async function expectFailClosedRefusals(app: OutageApp, backend: string, stop: () => Promise<unknown>): Promise<void> {
  const series = `firelimit_outage_refusals_total{backend="${backend}"}`;
  const refusalsBefore = (await seriesValue(app.metrics, series)) ?? 0;
  await stop();
  const during = await trafficFor(app, 1_500);
  expect(during.length).toBeGreaterThan(3);
  for (const hit of during) {
    expect(hit).toMatchObject({ status: 503, reason: 'backend_unavailable' });
    expect(Number(hit.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(hit.retryAfter)).toBeLessThanOrEqual(Math.ceil(PROBE_INTERVAL_MS / 1000));
  }
  // Only this outage's refusals: while the app first connected, fail-closed refused too.
  expect(((await seriesValue(app.metrics, series)) ?? 0) - refusalsBefore).toBe(during.length);
  expect(await seriesValue(app.metrics, 'firelimit_decisions_total{result="limited",source="local"}')).toBe(0);
}
