import { register as globalRegistry } from 'prom-client';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import { OutageGuard } from '../../src/library/limiter/outage-guard';
import type { Adjustment } from '../../src/library/window/algorithm';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { WindowRateLimiter, type FailurePolicy } from '../../src/library/limiter/rate-limiter';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import type { LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import { silentLogger } from '../../src/shared/logger';
import { LimiterMetrics } from '../../src/metrics/limiter-metrics';
import { startMetricsServer } from '../../src/metrics/metrics-server';

const policy: RateLimitPolicy = { name: 'default', limit: 2, windowMs: 60_000 };

/** A memory store that claims to be shared, with a switch to make it fail: a stand-in for RTDB or Redis. */
class SwitchableSharedStore implements LimitStore {
  readonly backend = 'redis' as const;
  readonly shared = true;
  down = false;
  private readonly inner = new MemoryWindowStore();
  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    return this.down ? Promise.reject(new Error('down')) : this.inner.consume(key, nowMs, policies, cost);
  }
  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    return this.down ? Promise.reject(new Error('down')) : this.inner.adjust(key, nowMs, policies, adjustments);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

function sharedLimiter(failurePolicy: FailurePolicy) {
  const metrics = new LimiterMetrics();
  const store = new SwitchableSharedStore();
  const clock = () => 0;
  const guard = new OutageGuard({ backend: 'redis', timeoutMs: 1_000, probeIntervalMs: 5_000, logger: silentLogger, clock, metrics });
  const limiter = new WindowRateLimiter({ store, guard, policies: [policy], failurePolicy, clock, logger: silentLogger, events: metrics });
  return { metrics, store, limiter };
}

/** Series name with labels -> value, from the exposition text. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

describe('LimiterMetrics', () => {
  it('counts memory-backend decisions as local, by result', async () => {
    const metrics = new LimiterMetrics();
    const limiter = await createRateLimiter({ policy, clock: () => 0, events: metrics });
    for (let i = 0; i < 5; i++) await limiter.consume('k');
    const values = parse(await metrics.scrape());
    expect(values.get('firelimit_decisions_total{result="allowed",source="local"}')).toBe(2);
    expect(values.get('firelimit_decisions_total{result="limited",source="local"}')).toBe(3);
    expect(values.get('firelimit_decisions_total{result="allowed",source="shared"}')).toBe(0);
    expect(values.get('firelimit_decisions_total{result="unavailable",source="local"}')).toBe(0);
  });

  it('counts shared decisions, the outage, local fallbacks and backend latency (fail-open)', async () => {
    const { metrics, store, limiter } = sharedLimiter('fail-open');
    await limiter.consume('a'); // shared allowed
    await limiter.consume('a'); // shared allowed
    await limiter.consume('a'); // shared limited (then cached as blocked, still shared)
    await limiter.consume('a'); // shared limited from the block cache
    store.down = true;
    await limiter.consume('b'); // the failed call: local allowed, outage opens
    await limiter.consume('b'); // outage: local allowed
    await limiter.consume('b'); // outage: local limited
    const values = parse(await metrics.scrape());
    expect(values.get('firelimit_decisions_total{result="allowed",source="shared"}')).toBe(2);
    expect(values.get('firelimit_decisions_total{result="limited",source="shared"}')).toBe(2);
    expect(values.get('firelimit_decisions_total{result="allowed",source="local"}')).toBe(2);
    expect(values.get('firelimit_decisions_total{result="limited",source="local"}')).toBe(1);
    expect(values.get('firelimit_backend_outages_total{backend="redis"}')).toBe(1);
    expect(values.get('firelimit_backend_outage_active{backend="redis"}')).toBe(1);
    expect(values.get('firelimit_outage_refusals_total{backend="redis"}')).toBe(0);
    // Four calls reached the store (three for 'a', the failed one for 'b'); the block cache and the outage kept the rest away.
    expect(values.get('firelimit_backend_call_duration_seconds_count{backend="redis"}')).toBe(4);
    expect(values.get('firelimit_backend_call_duration_seconds_bucket{le="2",backend="redis"}')).toBe(4);
    expect(values.get('firelimit_backend_call_duration_seconds_bucket{le="0.0005",backend="redis"}')).toBeGreaterThanOrEqual(0);
  });

  it('counts fail-closed refusals as unavailable and as outage refusals, not as limited', async () => {
    const { metrics, store, limiter } = sharedLimiter('fail-closed');
    store.down = true;
    for (let i = 0; i < 4; i++) expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'backend_unavailable' });
    const values = parse(await metrics.scrape());
    expect(values.get('firelimit_decisions_total{result="unavailable",source="local"}')).toBe(4);
    expect(values.get('firelimit_decisions_total{result="limited",source="local"}')).toBe(0);
    expect(values.get('firelimit_outage_refusals_total{backend="redis"}')).toBe(4);
  });

  it('shows the outage gauge at 0 and the counters at 0 before any outage', async () => {
    const { metrics } = sharedLimiter('fail-open');
    const values = parse(await metrics.scrape());
    expect(values.get('firelimit_backend_outage_active{backend="redis"}')).toBe(0);
    expect(values.get('firelimit_backend_outages_total{backend="redis"}')).toBe(0);
  });

  it('keeps its series out of the global registry, so two instances never collide', async () => {
    const a = new LimiterMetrics();
    const b = new LimiterMetrics();
    expect(a.registry).not.toBe(b.registry);
    expect(await globalRegistry.metrics()).not.toContain('firelimit_');
  });

  it('adds prefixed process metrics only when asked', async () => {
    expect(await new LimiterMetrics().scrape()).not.toContain('firelimit_process_');
    expect(await new LimiterMetrics({ processMetrics: true }).scrape()).toContain('firelimit_process_cpu_seconds_total');
  });
});

describe('startMetricsServer', () => {
  it('serves the registry on /metrics of its own listener, and nothing else', async () => {
    const metrics = new LimiterMetrics();
    const limiter = await createRateLimiter({ policy, events: metrics });
    await limiter.consume('k');
    const server = await startMetricsServer({ registry: metrics.registry, port: 0, host: '127.0.0.1' });
    try {
      const ok = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toContain('text/plain');
      expect(await ok.text()).toContain('firelimit_decisions_total{result="allowed",source="local"} 1');
      expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
    }
  });
});
