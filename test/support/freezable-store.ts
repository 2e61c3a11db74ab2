import type { Adjustment, FixedWindowState } from '../../src/library/window/algorithms';
import { windowNumberAt } from '../../src/library/window/fixed-window';
import type { BackendGuard, GuardedResult } from '../../src/library/limiter/backend-guard';
import type { LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import type { WindowRateLimiter } from '../../src/library/limiter/rate-limiter';

/**
 * A shared store that can freeze: one counter table (a MemoryWindowStore)
 * behind a Connection, and a guard that reports what OutageGuard reports
 * without its clock. Up, calls run; hung, they are sent and wait in a queue
 * (a frozen server's socket), given up on with their late outcome attached;
 * down, they are not sent.
 */
export type Mode = 'up' | 'hung' | 'down';

/** One shared counter table. Hung: calls wait in a queue (a frozen server's socket) and run, in order, when it thaws. */
export class FreezableDatabase {
  mode: Mode = 'up';
  readonly table = new MemoryWindowStore();
  /** Calls handed to the database (up or hung; a call while down is never sent). */
  sent = 0;
  private queue: { run: () => void; lose: () => void }[] = [];

  run<T>(call: () => Promise<T>): Promise<T> {
    this.sent++;
    if (this.mode !== 'hung') return call();
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: () => void call().then(resolve, reject), lose: () => reject(new Error('socket closed before the reply')) });
    });
  }

  /** The queued calls run (or, `lose`, fail without running: the connection dropped). */
  thaw(lose = false): void {
    this.mode = 'up';
    for (const queued of this.queue.splice(0)) (lose ? queued.lose : queued.run)();
  }

  /** Units the key has spent in `policy`'s window at `nowMs`. */
  spent(key: string, nowMs: number, policy: RateLimitPolicy): number {
    const state = this.table.peek(key, [policy])[0] as FixedWindowState | null;
    return state !== null && state.windowNumber === windowNumberAt(nowMs, policy.windowMs) ? state.count : 0;
  }
}

export class Connection implements LimitStore {
  readonly backend = 'redis' as const;
  readonly shared = true;
  constructor(private readonly db: FreezableDatabase) {}
  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    return this.db.run(() => this.db.table.consume(key, nowMs, policies, cost));
  }
  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    return this.db.run(() => this.db.table.adjust(key, nowMs, policies, adjustments));
  }
  async close(): Promise<void> {}
}

/** What OutageGuard reports, without its clock: hung, a call is sent and given up on (its late outcome attached); down, not sent. */
export function freezeGuard(db: FreezableDatabase): BackendGuard {
  return {
    async run<T>(call: () => Promise<T>): Promise<GuardedResult<T>> {
      if (db.mode === 'down') return { ok: false, cause: 'outage' };
      const hung = db.mode === 'hung';
      const attempt = call().then(
        (value): GuardedResult<T> => ({ ok: true, value }),
        (error: unknown): GuardedResult<T> => ({ ok: false, cause: 'error', error }),
      );
      if (!hung) return attempt;
      return { ok: false, cause: 'timeout', late: attempt.then((r) => (r.ok ? { landed: true as const, value: r.value } : { landed: false as const })) };
    },
  };
}


/** Lets settled late outcomes and the write-backs they start run to the end. */
export async function settleAll(limiters: readonly WindowRateLimiter[]): Promise<void> {
  for (let i = 0; i < 4; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all(limiters.map((l) => l.reconcile()));
  }
}
