import { holderIdOf, type UpstreamCaller } from '../schedule/upstream-holder';
import type { UpstreamPolicy } from '../schedule/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../schedule/upstream-quota-store';
import { scheduleUpstream } from '../schedule/upstream-schedule';
import type { UpstreamState } from '../schedule/upstream-state';
import { viewDecides } from '../schedule/upstream-view';
import type { WaitBudget } from '../limiter/wait-budget';

export interface CachedUpstreamQuotaOptions {
  readonly store: UpstreamQuotaStore;
  /** How old a cached state may be and still answer. Default 1000. 0 turns the cache off. */
  readonly maxStalenessMs?: number;
  /** Quota keys remembered at most (least recently seen dropped first). Default 100. */
  readonly maxKeys?: number;
}

export interface CursorCacheStats {
  /** Calls answered from the cached state, with no store round trip. */
  readonly answeredLocally: number;
  /** Calls that went to the store. */
  readonly forwarded: number;
}

/** Store answers a call waits for before it asks the store itself. */
const MAX_WAITS = 8;

interface Seen {
  readonly state: UpstreamState | null;
  readonly seenAtMs: number;
}

/**
 * The hot key's flood guard: every token hits the one quota key, and once
 * the queue is full most of them are rejected. A rejection writes nothing,
 * so it can be answered from the state this instance last saw: when
 * scheduleUpstream on that state writes nothing (a rejection, or a
 * reservation asked for again early), that is the answer, and the store is
 * not asked. Anything that would write (a run, a claim, a new reservation)
 * goes to the store, whose atomic step decides it afresh.
 *
 * Why a stale state is safe to reject from: the cursor only moves forward,
 * so "the slot is more than maxWaitMs away" stays true. What can turn false
 * meanwhile is a freed entry (a claim, an expiry) or a refunded budget unit,
 * so a cached answer is used for at most `maxStalenessMs`, after which the
 * next call refreshes the cache from the store; while a store call is in
 * flight, a call the cache cannot answer (no fresh state, or it would
 * write) waits for that answer and decides on it (whatever its age: it is at
 * most that call's round trip older than its own), up to MAX_WAITS answers,
 * so one store call per key is in flight per instance: a cold cache, or the
 * moment a slot opens, under a flood sends one call to the store, not all of
 * them, even when the store answers slower than `maxStalenessMs`. A holder whose reservation
 * was made on another instance after the cached state, and who comes back on
 * time, is never rejected here: its slot is at or after the cached cursor,
 * so the cached decision is a run, which goes to the store
 * (docs/adr/0033-upstream-atomic-not-read-then-write.md). A state the store
 * cut short answers only what it decides in full (upstream-view.ts, ADR 0063).
 */
export class CachedUpstreamQuota implements UpstreamQuotaStore {
  readonly backend: UpstreamQuotaStore['backend'];
  private readonly store: UpstreamQuotaStore;
  private readonly maxStalenessMs: number;
  private readonly maxKeys: number;
  /** Map order is recency: the first entry is the least recently seen. */
  private readonly seen = new Map<string, Seen>();
  /** Per key, the store call whose answer will refresh the cache, while one is in flight. */
  private readonly refreshing = new Map<string, Promise<void>>();
  private local = 0;
  private forwarded = 0;

  constructor(options: CachedUpstreamQuotaOptions) {
    this.store = options.store;
    this.backend = options.store.backend;
    this.maxStalenessMs = options.maxStalenessMs ?? 1000;
    this.maxKeys = options.maxKeys ?? 100;
    if (!Number.isSafeInteger(this.maxStalenessMs) || this.maxStalenessMs < 0) {
      throw new RangeError(`CachedUpstreamQuota: maxStalenessMs must be a non-negative integer, got ${this.maxStalenessMs}`);
    }
    if (!Number.isSafeInteger(this.maxKeys) || this.maxKeys < 1) {
      throw new RangeError(`CachedUpstreamQuota: maxKeys must be a positive integer, got ${this.maxKeys}`);
    }
  }

  get stats(): CursorCacheStats {
    return { answeredLocally: this.local, forwarded: this.forwarded };
  }

  async schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, restore: UpstreamState | null = null, budget?: WaitBudget): Promise<UpstreamScheduled> {
    const holder = holderIdOf(caller);
    let local = this.answer(key, nowMs, holder, policy, caller.claimSlotAtMs ?? null);
    // No usable answer here (no fresh state, or one on which this call would write), but a call is
    // already fetching the store's: wait for it rather than join a herd of transactions, and decide
    // on what it brought. A cold cache under a flood, and every moment a slot opened, otherwise sent
    // every call of that round trip to the store. Bounded, so a steady stream of grants cannot starve one.
    for (let waits = 0; local === undefined && waits < MAX_WAITS && this.maxStalenessMs > 0; waits++) {
      const refreshing = this.refreshing.get(key);
      if (refreshing === undefined) break;
      const before = this.seen.get(key);
      await refreshing;
      if (this.seen.get(key) === before) break; // the refresh failed: ask the store
      local = this.answer(key, nowMs, holder, policy, caller.claimSlotAtMs ?? null, true);
    }
    if (local !== undefined) {
      this.local++;
      return local;
    }
    this.forwarded++;
    const call = this.store.schedule(key, nowMs, caller, policy, restore, budget);
    if (!this.refreshing.has(key)) {
      const done = call.then(
        () => undefined,
        () => undefined,
      );
      this.refreshing.set(key, done);
      // No other call sets the key while `done` is there (the `has` above), so the entry is still `done`.
      void done.then(() => this.refreshing.delete(key));
    }
    const result = await call;
    this.remember(key, result.state, nowMs);
    return result;
  }

  /** The cached answer when scheduleUpstream on a fresh cached state writes nothing; else undefined. */
  private answer(key: string, nowMs: number, holder: string, policy: UpstreamPolicy, claimSlotAtMs: number | null, anyAge = false): UpstreamScheduled | undefined {
    const cached = anyAge ? this.seen.get(key) : this.fresh(key, nowMs);
    if (cached === undefined) return undefined;
    const { outcome, next } = scheduleUpstream(cached.state, nowMs, holder, policy, claimSlotAtMs);
    // A view cut short (the Redis store's, past UPSTREAM_VIEW_LIMIT reservations) answers only what it knows in full.
    return next === null && viewDecides(cached.state, nowMs, claimSlotAtMs, outcome) ? { outcome, state: cached.state } : undefined;
  }

  /** Seen within maxStalenessMs of nowMs, either way: a clock stepped back does not keep an old state fresh. */
  private fresh(key: string, nowMs: number): Seen | undefined {
    const cached = this.seen.get(key);
    return cached !== undefined && Math.abs(nowMs - cached.seenAtMs) <= this.maxStalenessMs ? cached : undefined;
  }

  close(): Promise<void> {
    this.seen.clear();
    return this.store.close();
  }

  private remember(key: string, state: UpstreamState | null, nowMs: number): void {
    if (this.maxStalenessMs === 0) return;
    const previous = this.seen.get(key);
    // Replies can arrive out of order; keep the newer view (the cursor only moves forward), unless it is
    // more than the staleness ahead of this call's clock: the clock stepped back, and the view would
    // otherwise stay until the clock caught up, every later reply thrown away.
    if (previous !== undefined && previous.seenAtMs > nowMs && previous.seenAtMs - nowMs <= this.maxStalenessMs) return;
    this.seen.delete(key);
    this.seen.set(key, { state, seenAtMs: nowMs });
    for (const oldest of this.seen.keys()) {
      if (this.seen.size <= this.maxKeys) break;
      this.seen.delete(oldest);
    }
  }
}
