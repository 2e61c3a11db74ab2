import type { Adjustment } from '../window/algorithm';
import type { WindowDecision } from '../window/decision';
import type { PolicySet } from '../window/policy';

/** Every store a limiter can run on: the one list (config, metrics and /developers read it). */
export const BACKEND_NAMES = ['memory', 'rtdb', 'redis', 'sqlite'] as const;

export type BackendName = (typeof BACKEND_NAMES)[number];

/** What a store answers for one call: the set's decision and, per policy, the state it left. */
export interface StoreDecision {
  readonly allowed: boolean;
  /** Per policy, in the set's order. */
  readonly decisions: readonly WindowDecision[];
  /**
   * Per policy, the state of record after the call (null: empty), as the
   * algorithm's value. The limiter answers a refused key from it without
   * asking again, and starts a local window from it during an outage.
   */
  readonly states: readonly unknown[];
}

/**
 * A place where limit states live. A store only makes the pure decision of a
 * policy set (decide-set.ts) atomic for one key; it decides nothing itself,
 * holds no algorithm-specific code and never reads the clock.
 */
export interface LimitStore {
  readonly backend: BackendName;
  /** True when every instance sees the same counters (rtdb, redis); false for memory. */
  readonly shared: boolean;
  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision>;
  /**
   * Applies each policy's adjustment (null: none) atomically: a refund or a
   * reconciliation of locally granted calls. Resolves once stored.
   */
  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void>;
  /**
   * What the store last heard of `key` without asking (a listener's cache),
   * including other instances' spending, per policy; absent where the store
   * has no such view. The limiter starts a local window from it during an outage.
   */
  lastSeen?(key: string, policies: PolicySet): readonly unknown[] | undefined;
  /**
   * Resolves true once the store can answer (its connection is up), false
   * after `timeoutMs`; never rejects. Absent: always ready (memory).
   */
  whenReady?(timeoutMs: number): Promise<boolean>;
  /**
   * Which of the store's shards holds `key` (an RTDB database's id), for a
   * store spread over several: the limiter then keeps one outage per shard,
   * so a failing database puts only its own keys on local windows. Absent:
   * one store, one outage. Undefined for a key: the whole store's outage
   * (a cluster whose topology is not known yet).
   */
  shardOf?(key: string): string | undefined;
  /**
   * Records `instanceId` as live at `nowMs` (its own clock) and answers how
   * many instances recorded themselves within the last `ttlMs`, this one
   * included: the fleet an outage's local windows share a limit among
   * (FleetEstimate, ADR 0067). Absent: the store cannot tell (memory).
   */
  heartbeat?(instanceId: string, nowMs: number, ttlMs: number): Promise<number>;
  /** Removes `instanceId`'s heartbeat, so a fleet that shrinks is counted smaller at once, not after the TTL. */
  leaveFleet?(instanceId: string): Promise<void>;
  close(): Promise<void>;
}
