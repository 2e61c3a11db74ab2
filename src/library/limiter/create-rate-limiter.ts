import { silentLogger, type Logger } from '../../shared/logger';
import type { LimiterEvents } from './limiter-events';
import type { BackendGuard } from './backend-guard';
import type { LimitStore } from './limit-store';
import { outageGuardFor } from './sharded-guard';
import type { PolicySet, RateLimitPolicy } from '../window/policy';
import { requiredPolicySet } from '../window/policy-choice';
import { WindowRateLimiter, type FailurePolicy, type RateLimiter } from './rate-limiter';
import { MemoryWindowStore } from '../memory/memory-store';
import type { HotKeyLeaseOptions } from '../window/hot-key-lease';
import { FleetEstimate } from './fleet-estimate';
import type { OutageShareMode } from './outage-share';

export interface RateLimiterOptions {
  /** Where the states live; default a MemoryWindowStore (this process only). The limiter closes it. */
  readonly store?: LimitStore;
  /** The default policy (one), or `policies` (several, charged all or nothing). */
  readonly policy?: RateLimitPolicy;
  readonly policies?: PolicySet;
  /** Deadline for one shared-store call before the local window answers. Default 1500. */
  readonly timeoutMs?: number;
  /** Default 'fail-open'. */
  readonly failurePolicy?: FailurePolicy;
  /** Injected time; default Date.now. */
  readonly clock?: () => number;
  /** Default: silent. */
  readonly logger?: Logger;
  /** During an outage, at most one call per this interval goes to the store. Default 5000. */
  readonly probeIntervalMs?: number;
  /** Decision, backend-latency and outage events (metrics implement them); default none. */
  readonly events?: LimiterEvents;
  /**
   * The outage guard, shared by every limiter on the same backend, so one
   * outage is one line each way and one metric, and a limiter that comes
   * second on a request does not wait for what the first found down. Its own
   * deadline and probe interval then apply (`timeoutMs`, `probeIntervalMs`
   * are not used). Default: an OutageGuard of this limiter's own.
   */
  readonly guard?: BackendGuard;
  /**
   * Leases for hot keys on a shared store (ADR 0066, docs/algorithms.md):
   * a key this instance decides at `hotRatePerSecond` or more, or that is
   * contended, is answered from units taken from the shared count in
   * advance. Fixed windows only. Default: off.
   */
  readonly hotKeys?: HotKeyLeaseOptions;
  /**
   * How an outage's local windows count (ADR 0067). 'fleet' (default): each
   * instance admits its share of what a key has left, divided by the live
   * instances counted from heartbeats in the store, so the fleet admits about
   * the limit; 'instance': each admits all of it (ADR 0003: N × the limit).
   * A store without heartbeats (memory) is always 'instance'.
   */
  readonly outageShare?: OutageShareMode;
  /**
   * Another limiter's estimate on the same backend (its `fleet`), so an
   * instance beats once however many limiters it has; this limiter does not
   * close it. Default: one of its own on its store, closed with it.
   */
  readonly fleet?: FleetEstimate;
  /** How often its own estimate beats. Default 10000 (FleetEstimate). */
  readonly fleetIntervalMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 1500;
export const DEFAULT_PROBE_INTERVAL_MS = 5000;

/**
 * A limiter over a store instance, with the outage guard every shared store
 * gets. Which store is chosen by the composition root
 * (src/service/create-limit-store.ts), never here.
 */
export async function createRateLimiter(options: RateLimiterOptions): Promise<RateLimiter> {
  const policies = requiredPolicySet(options, 'createRateLimiter');
  const logger = options.logger ?? silentLogger;
  const store = options.store ?? new MemoryWindowStore();
  const guard =
    options.guard ??
    outageGuardFor(store, {
      backend: store.backend,
      limiter: policies[0].name,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      probeIntervalMs: options.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS,
      logger,
      metrics: options.events,
    });
  const sharesFleet = (options.outageShare ?? 'fleet') === 'fleet' && store.shared && store.heartbeat !== undefined;
  const ownsFleet = sharesFleet && options.fleet === undefined;
  const fleet = !sharesFleet ? undefined : (options.fleet ?? new FleetEstimate({ store, clock: options.clock, logger, intervalMs: options.fleetIntervalMs }));
  // Not awaited: a backend down at boot must not hold the boot for a beat's timeout; the estimate is 1 until one answers.
  if (ownsFleet) void fleet?.start();
  return new WindowRateLimiter({
    store,
    guard,
    policies,
    failurePolicy: options.failurePolicy ?? 'fail-open',
    clock: options.clock ?? Date.now,
    logger,
    events: options.events,
    hotKeys: options.hotKeys,
    fleet,
    ownsFleet,
  });
}
