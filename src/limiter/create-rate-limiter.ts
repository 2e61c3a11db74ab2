import type { Database } from 'firebase-admin/database';
import { silentLogger, type Logger } from '../shared/logger';
import type { LimiterEvents } from './limiter-events';
import type { BackendGuard } from './backend-guard';
import { OutageGuard } from './outage-guard';
import type { PolicySet, RateLimitPolicy } from './policy';
import { WindowRateLimiter, type FailurePolicy, type RateLimiter } from './rate-limiter';
import { MemoryWindowStore } from './stores/memory-store';
import type { BackendName, LimitStore } from './limit-store';
import { requiredPolicySet } from './policy-choice';

export interface RateLimiterOptions {
  readonly backend: BackendName;
  /** The default policy (one), or `policies` (several, charged all or nothing). */
  readonly policy?: RateLimitPolicy;
  readonly policies?: PolicySet;
  /** Deadline for one shared-backend call before the local window answers. Default 1500. */
  readonly timeoutMs?: number;
  /** Default 'fail-open'. */
  readonly failurePolicy?: FailurePolicy;
  /** Injected time; default Date.now. */
  readonly clock?: () => number;
  /** Default: silent. */
  readonly logger?: Logger;
  /** Required when backend is 'rtdb'. */
  readonly rtdb?: {
    readonly database: Database;
    /** Default 'rateLimits'. Separate limits (sign-in attempts, quotas) use their own root. */
    readonly rootPath?: string;
    /** Mean ms between sweeps of expired keys under the root; 0 = none. Default 60000 (docs/adr/0008). */
    readonly sweepIntervalMs?: number;
  };
  /** Required when backend is 'redis'. `keyPrefix` default 'firelimit:'; `commandTimeoutMs` default 1000. */
  readonly redis?: { readonly url: string; readonly keyPrefix?: string; readonly commandTimeoutMs?: number };
  /** During an outage, at most one call per this interval goes to the backend. Default 5000. */
  readonly probeIntervalMs?: number;
  /** Decision, backend-latency and outage series; default none. */
  readonly metrics?: LimiterEvents;
  /** Replaces the default outage guard (an OutageGuard with timeoutMs and probeIntervalMs). */
  readonly guard?: BackendGuard;
}

export const DEFAULT_TIMEOUT_MS = 1500;
export const DEFAULT_PROBE_INTERVAL_MS = 5000;

/**
 * The one place a backend is chosen. Callers get a RateLimiter and never
 * learn which store is behind it.
 */
export async function createRateLimiter(options: RateLimiterOptions): Promise<RateLimiter> {
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const clock = options.clock ?? Date.now;
  const policies = requiredPolicySet(options, 'createRateLimiter');
  const store = await createStore(options);
  const guard =
    options.guard ??
    new OutageGuard({
      backend: store.backend,
      limiter: policies[0].name,
      timeoutMs,
      probeIntervalMs: options.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS,
      logger,
      metrics: options.metrics,
    });
  return new WindowRateLimiter({
    store,
    guard,
    policies,
    failurePolicy: options.failurePolicy ?? 'fail-open',
    clock,
    logger,
    events: options.metrics,
  });
}

async function createStore(options: RateLimiterOptions): Promise<LimitStore> {
  switch (options.backend) {
    case 'memory':
      return new MemoryWindowStore();
    case 'rtdb': {
      if (options.rtdb === undefined) throw new TypeError("createRateLimiter: backend 'rtdb' needs options.rtdb.database");
      const { RtdbWindowStore } = await import('./stores/rtdb-store');
      return new RtdbWindowStore({
        database: options.rtdb.database,
        rootPath: options.rtdb.rootPath ?? 'rateLimits',
        sweepIntervalMs: options.rtdb.sweepIntervalMs,
        // The sweeper judges expiry by the same clock the decisions use.
        clock: options.clock,
        logger: options.logger,
      });
    }
    case 'redis': {
      if (options.redis === undefined) throw new TypeError("createRateLimiter: backend 'redis' needs options.redis.url");
      // Loaded only when chosen, so the other backends never pay for the redis package.
      const { RedisWindowStore } = await import('./stores/redis-store');
      return new RedisWindowStore({ ...options.redis, logger: options.logger });
    }
    default:
      throw new TypeError(`createRateLimiter: unknown backend ${JSON.stringify(options.backend)}`);
  }
}
