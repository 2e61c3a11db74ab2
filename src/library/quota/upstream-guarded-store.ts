import { MIN_OUTAGE_RETRY_AFTER_MS } from '../limiter/outage-guard';
import type { BackendGuard, BackendFailureCause } from '../limiter/backend-guard';
import type { FailurePolicy } from '../limiter/rate-limiter';
import type { UpstreamCaller } from '../schedule/upstream-holder';
import type { UpstreamPolicy } from '../schedule/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../schedule/upstream-quota-store';
import type { UpstreamState } from '../schedule/upstream-state';
import { MemoryUpstreamQuotaStore } from '../memory/upstream-memory-store';
import type { WaitBudget } from '../limiter/wait-budget';
import type { FleetEstimate } from '../limiter/fleet-estimate';
import { upstreamOutagePolicy } from '../schedule/upstream-outage-share';

export interface GuardedUpstreamQuotaOptions {
  readonly store: UpstreamQuotaStore;
  /** The deadline and outage handling of the limiter's own backend calls (OutageGuard). */
  readonly guard: BackendGuard;
  /** RATE_LIMIT_FAILURE_POLICY, as for the limiter. */
  readonly failurePolicy: FailurePolicy;
  /** A decision made without the shared store: locally (fail-open) or refused (fail-closed). */
  readonly onUnshared?: (cause: BackendFailureCause) => void;
  /** The live instances (the limiter's FleetEstimate): a fail-open outage schedules on this instance's share of the rate (ADR 0067). Default: the whole rate. */
  readonly fleet?: Pick<FleetEstimate, 'current'>;
}

/**
 * The shared upstream quota when its backend is slow, down or restarted
 * empty (docs/adr/0040-upstream-quota-outage.md, docs/adr/0044): every call
 * to the store is bounded by the limiter's deadline and outage guard, so a
 * frozen database never holds a forwarded call. Past it, as the limiter does
 * for its counters:
 * - fail-open: the call is scheduled on this instance's own cursor, at its
 *   share of the rate and of what the day's budget had left when it knows
 *   the fleet (`fleet`, ADR 0067), else at the full rate, so N instances may
 *   together send up to N times the rate for as long as the outage lasts;
 * - fail-closed: the call is rejected (`unavailable`) with a retryAfterMs
 *   no sooner than the next probe.
 * When the store answers again, its cursor is the one of record; what was
 * scheduled locally meanwhile is not written back.
 *
 * The cursor and the reservations live only in the database, so this keeps
 * the last state the store answered for each key and hands it down as
 * `restore`: a store that lost the key (restarted empty, evicted it) goes on
 * from this instance's view instead of from nothing, and so does the local
 * cursor an outage starts on. Keys come from config, so the map is as small
 * as the config.
 */
export class GuardedUpstreamQuota implements UpstreamQuotaStore {
  readonly backend: UpstreamQuotaStore['backend'];
  private readonly local = new MemoryUpstreamQuotaStore();
  private readonly lastSeen = new Map<string, UpstreamState | null>();

  constructor(private readonly options: GuardedUpstreamQuotaOptions) {
    this.backend = options.store.backend;
  }

  async schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, _restore?: UpstreamState | null, budget?: WaitBudget): Promise<UpstreamScheduled> {
    const restore = this.lastSeen.get(key) ?? null;
    const result = await this.options.guard.run(() => this.options.store.schedule(key, nowMs, caller, policy, restore), budget);
    if (result.ok) {
      this.lastSeen.set(key, result.value.state);
      // The shared store is of record again: the next outage starts from what it last said, not this one's cursor.
      this.local.forget(key);
      return result.value;
    }
    this.options.onUnshared?.(result.cause);
    if (this.options.failurePolicy === 'fail-closed') {
      return { outcome: { status: 'rejected', reason: 'unavailable', retryAfterMs: Math.max(MIN_OUTAGE_RETRY_AFTER_MS, result.retryAfterMs ?? 0) }, state: null };
    }
    const { fleet } = this.options;
    return this.local.schedule(key, nowMs, caller, fleet === undefined ? policy : upstreamOutagePolicy(policy, fleet.current(), restore, nowMs), restore);
  }

  close(): Promise<void> {
    return this.options.store.close();
  }
}
