import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Adjustment } from '../../src/library/window/algorithm';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import type { LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import type { LimitStoreSpec } from '../../src/service/create-limit-store';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import type { PolicySet } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { createCapturingLogger } from '../support/capturing-logger';

/** One namespace's shared-looking counts; its count outlives close, as a real backend's does. */
class CountingStore implements LimitStore {
  readonly backend = 'redis' as const;
  readonly shared = true;
  readonly counters = new MemoryWindowStore();
  consumes = 0;

  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    this.consumes++;
    return this.counters.consume(key, nowMs, policies, cost);
  }

  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    return this.counters.adjust(key, nowMs, policies, adjustments);
  }

  async close(): Promise<void> {}
}

const NOW_MS = 1_700_000_010_000;
const CALLS = 20;
let dir: string;
let services = 0;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-hot-keys-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function serviceWith(env: NodeJS.ProcessEnv): Promise<{ service: Service; stores: Map<string, CountingStore> }> {
  const stores = new Map<string, CountingStore>();
  const config = loadConfig({
    RATE_LIMIT_BACKEND: 'redis',
    REDIS_URL: 'redis://127.0.0.1:1',
    RATE_LIMIT_PER_MINUTE: '1000',
    AUTH_FAILURES_PER_MINUTE: '1000',
    TOKENS_FILE: path.join(dir, `tokens-${++services}.json`),
    ...env,
  });
  const limitStore = (spec: LimitStoreSpec): LimitStore => {
    const store = new CountingStore();
    stores.set(spec.namespace, store);
    return store;
  };
  const service = await buildService(config, { logger: createCapturingLogger(), clock: () => NOW_MS, limitStore });
  return { service, stores };
}

async function admittedOf(limiter: RateLimiter): Promise<number> {
  let admitted = 0;
  for (let i = 0; i < CALLS; i++) if ((await limiter.consume('tok_hot')).allowed) admitted++;
  return admitted;
}

describe('the service passes RATE_LIMIT_HOT_KEY* to its shared limiters', () => {
  it('leases a hot key of the token limits and of the sign-in budget, and gives the unused units back on release', async () => {
    const { service, stores } = await serviceWith({ RATE_LIMIT_HOT_KEY_RATE_PER_SECOND: '3', RATE_LIMIT_HOT_KEY_MAX_LEASE_UNITS: '50' });
    const limits = [
      [service.limiter, stores.get('rateLimits')],
      [service.authFailureLimiter, stores.get('authFailures')],
    ] as const;
    const admitted: number[] = [];
    for (const [limiter, store] of limits) {
      admitted.push(await admittedOf(limiter));
      // Fewer store calls than decisions: the rest came from a lease.
      expect(store?.consumes).toBeLessThan(CALLS);
    }
    await service.release();
    limits.forEach(([limiter, store], i) => {
      const read = store?.counters.consumeSync('tok_hot', NOW_MS, limiter.policies, 0);
      expect(limiter.policies[0].limit - (read?.decisions[0]?.remaining ?? 0)).toBe(admitted[i]);
    });
  });

  it('asks the store for every decision with RATE_LIMIT_HOT_KEYS=off', async () => {
    const { service, stores } = await serviceWith({ RATE_LIMIT_HOT_KEYS: 'off', RATE_LIMIT_HOT_KEY_RATE_PER_SECOND: '3' });
    await admittedOf(service.limiter);
    await admittedOf(service.authFailureLimiter);
    expect(stores.get('rateLimits')?.consumes).toBe(CALLS);
    expect(stores.get('authFailures')?.consumes).toBe(CALLS);
    await service.release();
  });
});
