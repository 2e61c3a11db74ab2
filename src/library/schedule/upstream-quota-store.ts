import type { BackendName } from '../limiter/limit-store';
import type { WaitBudget } from '../limiter/wait-budget';
import type { UpstreamCaller } from './upstream-holder';
import type { UpstreamPolicy } from './upstream-policy';
import type { UpstreamOutcome } from './upstream-schedule';
import type { UpstreamState } from './upstream-state';

/** What a store answers for one scheduling call. */
export interface UpstreamScheduled {
  readonly outcome: UpstreamOutcome;
  /**
   * The state of record after the call (null: empty). The cursor cache
   * (upstream-cursor-cache.ts) answers would-be rejections from it without
   * asking again; metrics read the day's count from it.
   */
  readonly state: UpstreamState | null;
}

/**
 * The port the gateway calls for the shared upstream quota: one key per
 * quota (the upstream, or one tool's own quota), every token on it. A store
 * only makes the pure scheduleUpstream (upstream-schedule.ts) atomic for that
 * key: memory (a Map), RTDB (one transaction), Redis (one Lua twin); it
 * decides nothing itself and never reads the clock.
 *
 * `caller` is the verified token id and the tool (upstream-holder.ts); the
 * store turns it into the holder id, so no caller can name someone else's
 * reservation.
 *
 * `restore` is what to schedule on, inside the same atomic step, when the
 * store holds no state for the key although one existed: the database
 * restarted empty, evicted the key, or holds a value that does not parse.
 * It is the last state this instance saw (upstream-guarded-store.ts); a
 * state the store holds always wins over it (docs/adr/0044).
 *
 * `budget` is the request's wait budget (docs/adr/0047): the store call
 * waits at most what is left of it; only a store behind an outage guard
 * (upstream-guarded-store.ts) reads it.
 */
export interface UpstreamQuotaStore {
  readonly backend: BackendName;
  schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, restore?: UpstreamState | null, budget?: WaitBudget): Promise<UpstreamScheduled>;
  close(): Promise<void>;
}
