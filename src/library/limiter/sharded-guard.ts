import type { BackendGuard, GuardedResult } from './backend-guard';
import type { LimitStore } from './limit-store';
import { OutageGuard, type OutageGuardOptions } from './outage-guard';
import type { WaitBudget } from './wait-budget';

/**
 * One outage per shard of a store spread over several (RTDB databases): a
 * guard of its own for each shard a call names, made on first use, so a
 * frozen database opens an outage for its keys alone and the others stay
 * shared (issue 18 item 2). Each shard's guard logs and reports under its
 * shard's id. A call that names no shard goes to the store-wide guard.
 */
export class ShardedGuard implements BackendGuard {
  private readonly guards = new Map<string, OutageGuard>();
  private readonly whole: OutageGuard;

  constructor(private readonly options: OutageGuardOptions) {
    this.whole = new OutageGuard(options);
  }

  run<T>(call: () => Promise<T>, budget?: WaitBudget, shard?: string): Promise<GuardedResult<T>> {
    if (shard === undefined || !this.whole.isOpen) return this.guardOf(shard).run(call, budget);
    return this.guardOf(shard).run(call, budget).then((result) => {
      // A shard answered: whatever opened the store-wide outage (a cluster whose topology was not known yet) is over.
      if (result.ok) this.whole.recover();
      return result;
    });
  }

  /** The guard of one shard (the store-wide one for undefined); for tests and health checks. */
  guardOf(shard: string | undefined): OutageGuard {
    if (shard === undefined) return this.whole;
    let guard = this.guards.get(shard);
    if (guard === undefined) {
      guard = new OutageGuard({ ...this.options, shard });
      this.guards.set(shard, guard);
    }
    return guard;
  }

  /** Shards in an outage now. */
  get openShards(): readonly string[] {
    return [...this.guards].filter(([, guard]) => guard.isOpen).map(([shard]) => shard);
  }
}

/** The guard a store gets: one outage per shard when it has shards (LimitStore.shardOf), else one for the whole store. */
export function outageGuardFor(store: LimitStore, options: OutageGuardOptions): BackendGuard {
  return store.shardOf !== undefined ? new ShardedGuard(options) : new OutageGuard(options);
}
