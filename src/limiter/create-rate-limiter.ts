import type { Database } from 'firebase-admin/database';
import { silentLogger, type Logger } from '../logging/logger';
import { DeadlineGuard, type BackendGuard } from './backend-guard';
import type { RateLimitPolicy } from './policy';
import { WindowRateLimiter, type FailurePolicy, type RateLimiter } from './rate-limiter';
import { MemoryWindowStore } from './stores/memory-store';
import type { BackendName, WindowStore } from './window-store';

export interface RateLimiterOptions {
  readonly backend: BackendName;
  /** The default policy. */
  readonly policy: RateLimitPolicy;
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
  };
  /** Replaces the default deadline guard (outage handling plugs in here). */
  readonly guard?: BackendGuard;
}

export const DEFAULT_TIMEOUT_MS = 1500;

/**
 * The one place a backend is chosen. Callers get a RateLimiter and never
 * learn which store is behind it.
 */
export async function createRateLimiter(options: RateLimiterOptions): Promise<RateLimiter> {
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const store = await createStore(options);
  return new WindowRateLimiter({
    store,
    guard: options.guard ?? new DeadlineGuard({ backend: store.backend, timeoutMs, logger }),
    policy: options.policy,
    failurePolicy: options.failurePolicy ?? 'fail-open',
    clock: options.clock ?? Date.now,
    logger,
  });
}

async function createStore(options: RateLimiterOptions): Promise<WindowStore> {
  switch (options.backend) {
    case 'memory':
      return new MemoryWindowStore();
    case 'rtdb': {
      if (options.rtdb === undefined) throw new TypeError("createRateLimiter: backend 'rtdb' needs options.rtdb.database");
      const { RtdbWindowStore } = await import('./stores/rtdb-store');
      return new RtdbWindowStore({ database: options.rtdb.database, rootPath: options.rtdb.rootPath ?? 'rateLimits' });
    }
    default:
      throw new TypeError(`createRateLimiter: unknown backend ${JSON.stringify(options.backend)}`);
  }
}
