import type { Adjustment } from '../window/algorithm';
import type { LimitStore, StoreDecision } from '../limiter/limit-store';
import type { PolicySet } from '../window/policy';
import { rendezvousIndex } from './rendezvous';

/** One database of several: its stable id (the URL, what the hash reads) and its store. */
export interface StoreShard {
  readonly id: string;
  readonly store: LimitStore;
}

/**
 * Several stores of one backend as one: each key lives wholly in the store
 * rendezvousIndex picks for it (rendezvous.ts), so every call on a key is one
 * atomic step in one database and its figure is exact as on a single one;
 * keys spread over the databases, and so does their write load. Each shard
 * keeps its own connection, listeners and sweeper (ADR 0057), and, through
 * shardOf, its own outage: a failing database puts only its keys on local
 * windows.
 */
export class ShardedLimitStore implements LimitStore {
  readonly backend: LimitStore['backend'];
  readonly shared: boolean;
  private readonly shards: readonly StoreShard[];
  private readonly ids: readonly string[];
  // The limiter asks shardOf(key) and then calls consume/adjust with the same key: one hash of n databases per call, not two.
  private lastKey: string | undefined;
  private lastIndex = 0;

  constructor(shards: readonly StoreShard[]) {
    const first = shards[0];
    if (first === undefined) throw new RangeError('ShardedLimitStore: at least one store is needed');
    const ids = shards.map((shard) => shard.id);
    if (new Set(ids).size !== ids.length) throw new RangeError('ShardedLimitStore: every store needs its own id; the same database is listed twice');
    if (shards.some((shard) => shard.store.backend !== first.store.backend)) throw new RangeError('ShardedLimitStore: every store must be of one backend');
    this.shards = shards;
    this.ids = ids;
    this.backend = first.store.backend;
    this.shared = shards.every((shard) => shard.store.shared);
  }

  /** Which shard (its index in the list given) holds `key`. */
  shardIndexOf(key: string): number {
    if (key !== this.lastKey) {
      this.lastIndex = rendezvousIndex(key, this.ids);
      this.lastKey = key;
    }
    return this.lastIndex;
  }

  /** The id of the shard that holds `key`: the limiter keeps one outage per shard (ShardedGuard). */
  shardOf(key: string): string {
    return this.ids[this.shardIndexOf(key)] as string;
  }

  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    return this.storeOf(key).consume(key, nowMs, policies, cost);
  }

  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    return this.storeOf(key).adjust(key, nowMs, policies, adjustments);
  }

  lastSeen(key: string, policies: PolicySet): readonly unknown[] | undefined {
    return this.storeOf(key).lastSeen?.(key, policies);
  }

  /** The fleet beats in the first database only: it is one fleet, and one count is enough. */
  heartbeat(instanceId: string, nowMs: number, ttlMs: number): Promise<number> {
    const first = this.shards[0] as StoreShard;
    return first.store.heartbeat === undefined ? Promise.resolve(1) : first.store.heartbeat(instanceId, nowMs, ttlMs);
  }

  async leaveFleet(instanceId: string): Promise<void> {
    await (this.shards[0] as StoreShard).store.leaveFleet?.(instanceId);
  }

  /** Ready when every database is: a key's database is fixed, so one not yet connected would fail its keys. */
  async whenReady(timeoutMs: number): Promise<boolean> {
    const ready = await Promise.all(this.shards.map((shard) => shard.store.whenReady?.(timeoutMs) ?? Promise.resolve(true)));
    return ready.every(Boolean);
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.map((shard) => shard.store.close()));
  }

  private storeOf(key: string): LimitStore {
    return (this.shards[this.shardIndexOf(key)] as StoreShard).store;
  }
}
