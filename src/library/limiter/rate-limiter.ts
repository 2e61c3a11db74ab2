import type { Logger } from '../../shared/logger';
import type { BackendGuard, GuardedResult } from './backend-guard';
import { compiledSetOf, type CompiledPolicySet } from '../window/compiled-policy-set';
import type { Decision } from '../window/decision';
import { assertValidKey } from '../window/key';
import type { LimiterEvents } from './limiter-events';
import type { BackendName, LimitStore, StoreDecision } from './limit-store';
import { decisionOfOne, toDecision, unavailable } from './limiter-decisions';
import { OutageFallback } from './outage-fallback';
import type { FleetEstimate } from './fleet-estimate';
import { policySetOf, requiredPolicySet, setIdOf, type PolicyChoice } from '../window/policy-choice';
import { assertValidCost, type PolicySet, type RateLimitPolicy } from '../window/policy';
import { RefusalCache } from './refusal-cache';
import { MemoryWindowStore } from '../memory/memory-store';
import type { WaitBudget } from './wait-budget';
import { HotKeyLeases } from './hot-key-leases';
import type { HotKeyLeaseOptions } from '../window/hot-key-lease';

export { toDecision } from './limiter-decisions';

export type FailurePolicy = 'fail-open' | 'fail-closed';

export interface ConsumeOptions extends PolicyChoice {
  /** Units this call spends. Default 1; 0 reads every policy without spending. */
  readonly cost?: number;
  /** The request's wait budget for its shared stores (WaitBudget); default none: each call gets the guard's deadline. */
  readonly budget?: WaitBudget;
}

export interface RateLimiter {
  readonly backend: BackendName;
  /** The default policies, the ones published for the default tier. */
  readonly policies: PolicySet;
  readonly failurePolicy: FailurePolicy;
  consume(key: string, options?: ConsumeOptions): Promise<Decision>;
  /**
   * consume's decision without a promise, when this limiter makes it without
   * waiting on I/O: every call on the memory store; on a shared store, only a
   * refusal its refusal cache answers. Undefined when the decision needs the
   * store, and then nothing was spent: call consume. Throws where consume
   * rejects (a bad key or cost). The Decision is the caller's, as consume's
   * is: it never changes afterwards. Optional: a limiter written elsewhere
   * (a test double) may have only consume.
   */
  consumeSync?(key: string, options?: ConsumeOptions): Decision | undefined;
  /**
   * Gives back what an allowed decision spent: a reservation that turned out
   * not to be needed (a sign-in that was valid). Best effort: a refund the
   * store cannot take is dropped, which errs towards the limit. Pass the same
   * options as the consume.
   */
  refund(key: string, spent: Decision, options?: ConsumeOptions): Promise<void>;
  /**
   * Waits, at most `timeoutMs`, for the backend's connection. A service awaits
   * it before taking traffic, so its first requests do not open an outage
   * just because a client was still connecting. False: not ready in time
   * (the limiter still works; calls fail over by the failure policy).
   */
  whenReady(timeoutMs: number): Promise<boolean>;
  /**
   * The live-instance estimate an outage shares each limit by (ADR 0067);
   * undefined: each instance counts the whole limit. Pass it as `fleet` to
   * another limiter on the same backend so the instance beats once.
   */
  readonly fleet?: FleetEstimate;
  close(): Promise<void>;
}

export interface LimiterParts {
  readonly store: LimitStore;
  readonly guard: BackendGuard;
  readonly policies: PolicySet;
  readonly failurePolicy: FailurePolicy;
  readonly clock: () => number;
  readonly logger: Logger;
  /** Retry-After for a fail-closed refusal when the guard gives none. Default 1000. */
  readonly unavailableRetryAfterMs?: number;
  /** Keys the refusal cache holds at most. Default 100000. */
  readonly maxBlockedKeys?: number;
  /** Told once per decision returned; default none. */
  readonly events?: Pick<LimiterEvents, 'recordDecision'>;
  /** Leases for hot keys on a shared store (ADR 0066); default none. */
  readonly hotKeys?: HotKeyLeaseOptions;
  /** The live instances an outage's local windows share each limit among (ADR 0067); default none: each counts all of it. */
  readonly fleet?: FleetEstimate;
  /** Whether close() closes `fleet` (it was made for this limiter, not lent by another). */
  readonly ownsFleet?: boolean;
}

const NO_OPTIONS: ConsumeOptions = {};
// Read once: a wrapped or replaced consume on an instance (a spy, a subclass) is then called as it is.
const memoryConsume = MemoryWindowStore.prototype.consume;

/**
 * Runs decisions against one store and answers from this instance's own
 * states when a shared store fails (fail-open) or refuses (fail-closed).
 *
 * A key refused by the shared store is answered here, from the states the
 * store reported, until they would allow the call (RefusalCache): an
 * over-limit client costs no database write for the rest of its refusal.
 *
 * During an outage (fail-open) the call is decided by this instance's own
 * window for the key, seeded from the shared states, and written back later
 * (OutageFallback).
 */
export class WindowRateLimiter implements RateLimiter {
  readonly backend: BackendName;
  readonly policies: PolicySet;
  readonly failurePolicy: FailurePolicy;
  readonly fleet: FleetEstimate | undefined;

  /** The store itself when it is exactly this process's memory store: its synchronous twin answers without a promise in between. */
  private readonly syncStore: MemoryWindowStore | undefined;
  private readonly refused: RefusalCache;
  private readonly outage: OutageFallback;
  private readonly leases: HotKeyLeases | undefined;
  /** The default policies compiled once: the hot path then reads no imported binding for them (a getter each under tsx). */
  private readonly defaultSet: CompiledPolicySet;

  constructor(private readonly parts: LimiterParts) {
    this.policies = requiredPolicySet(parts, 'WindowRateLimiter');
    this.backend = parts.store.backend;
    this.failurePolicy = parts.failurePolicy;
    this.fleet = parts.store.shared ? parts.fleet : undefined;
    this.refused = new RefusalCache(parts.maxBlockedKeys);
    this.outage = new OutageFallback({ store: parts.store, guard: parts.guard, clock: parts.clock, logger: parts.logger, backend: this.backend, fleet: this.fleet });
    this.leases = parts.hotKeys === undefined || !parts.store.shared ? undefined : new HotKeyLeases(parts.hotKeys);
    this.syncStore = parts.store.constructor === MemoryWindowStore ? (parts.store as MemoryWindowStore) : undefined;
    this.defaultSet = compiledSetOf(this.policies);
  }

  /** The first default policy; shorthand for code that publishes one figure. */
  get policy(): RateLimitPolicy {
    return this.policies[0];
  }

  consume(key: string, options: ConsumeOptions = NO_OPTIONS): Promise<Decision> {
    // Not an async function: the memory store answers synchronously, and an async function would add
    // a promise and a turn of the microtask queue to every decision. A throw still becomes a rejection.
    try {
      const decided = this.decideInMemory(key, options);
      if (decided !== undefined) return Promise.resolve(decided);
      const { cost, policies } = this.checked(key, options);
      return this.consumeFrom(key, this.parts.clock(), policies, cost, options.budget);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  consumeSync(key: string, options: ConsumeOptions = NO_OPTIONS): Decision | undefined {
    // A store of this process only is either the memory store, decided here, or one that must be awaited.
    if (!this.parts.store.shared) return this.decideInMemory(key, options);
    const { cost, policies } = this.checked(key, options);
    const cached = this.refused.refusal(`${setIdOf(policies)}|${key}`, this.parts.clock(), policies, cost);
    return cached === undefined ? undefined : this.record(toDecision(cached, policies, true));
  }

  /** The decision of this process's memory store, made synchronously; undefined when the store is another. */
  private decideInMemory(key: string, options: ConsumeOptions): Decision | undefined {
    const { syncStore } = this;
    if (syncStore === undefined || syncStore.consume !== memoryConsume) return undefined;
    const cost = options.cost ?? 1;
    const policies = options.policy === undefined && options.policies === undefined ? this.policies : policySetOf(options, this.policies);
    // A call of one unit, or a read (cost 0: the service reads its guard budgets on every request).
    if (cost === 1 || cost === 0) {
      const set = policies === this.policies ? this.defaultSet : compiledSetOf(policies);
      // The key is checked by the store, only when it holds no state for it (every key it holds passed).
      if (set.size === 1) return this.record(decisionOfOne(syncStore.decideOneSync(key, this.parts.clock(), set, cost, true), set, false));
    }
    const checked = this.checked(key, options);
    return this.record(toDecision(syncStore.consumeSync(key, this.parts.clock(), checked.policies, checked.cost), checked.policies, false));
  }

  /** A call's cost and policy set, checked as every call off the memory store's shortcut is. */
  private checked(key: string, options: ConsumeOptions): { readonly cost: number; readonly policies: PolicySet } {
    const cost = options.cost ?? 1;
    const policies = policySetOf(options, this.policies);
    assertValidKey(key);
    // The default cost needs no check.
    if (cost !== 1) assertValidCost(cost);
    return { cost, policies };
  }

  private async consumeFrom(key: string, nowMs: number, policies: PolicySet, cost: number, budget: WaitBudget | undefined): Promise<Decision> {
    const { store } = this.parts;
    if (!store.shared) return this.record(toDecision(await store.consume(key, nowMs, policies, cost), policies, false));

    const ledgerKey = `${setIdOf(policies)}|${key}`;
    const cached = this.refused.refusal(ledgerKey, nowMs, policies, cost);
    if (cached !== undefined) return this.record(toDecision(cached, policies, true));

    // Checked here, not in leased(): without leases a call must not pay an extra await.
    const fromLease = this.leases === undefined ? undefined : await this.leased(key, ledgerKey, nowMs, policies, cost, budget);
    const { outage } = this;
    const result = fromLease ?? (await outage.consumeShared(key, ledgerKey, nowMs, policies, cost, budget));
    if (!result.ok && result.cause === 'contention') this.leases?.contended(ledgerKey);
    if (result.ok) {
      outage.answered(ledgerKey, result.value.states, policies, nowMs);
      if (!result.value.allowed && cost > 0) this.refused.remember(ledgerKey, result.value.states, policies, nowMs);
      // A read that reached the store brings a refund another instance made (a sign-in found valid) to the cache.
      else if (cost === 0) this.refused.refresh(ledgerKey, result.value.states, policies, nowMs);
      return this.record(toDecision(result.value, policies, true));
    }
    if (this.failurePolicy === 'fail-closed') {
      outage.refusedWhileLate(ledgerKey, key, policies, cost, result.late);
      return this.record(unavailable(policies, nowMs, result.retryAfterMs ?? this.parts.unavailableRetryAfterMs ?? 1000));
    }
    return this.record(outage.decideLocally(key, ledgerKey, nowMs, policies, cost, result.late));
  }

  /** A hot key's answer from its lease (ADR 0066); undefined: ask the store as usual. Never while outage write-backs are owed. */
  private leased(key: string, ledgerKey: string, nowMs: number, policies: PolicySet, cost: number, budget: WaitBudget | undefined): Promise<GuardedResult<StoreDecision> | undefined> {
    const { leases } = this;
    if (leases === undefined || this.outage.unsettled) return Promise.resolve(undefined);
    const { guard, store } = this.parts;
    const shard = store.shardOf?.(key);
    return leases.consume(
      ledgerKey,
      nowMs,
      policies,
      cost,
      (units) => guard.run(() => store.consume(key, nowMs, policies, units), budget, shard),
      (units) => guard.run(() => store.adjust(key, this.parts.clock(), policies, policies.map(() => ({ atLeast: null, deltaUnits: -units }))), undefined, shard),
    );
  }

  /** Keys the refusal cache holds now; for tests and metrics. */
  get blockedKeys(): number {
    return this.refused.size;
  }

  /** Units granted from local states that the shared store has not been told of yet. */
  get unreconciledUnits(): number {
    return this.outage.unreconciledUnits;
  }

  /** Units granted locally whose shared call may still land on the store; written back only if it does not. */
  get inFlightUnits(): number {
    return this.outage.inFlightUnits;
  }

  /** Writes what was granted locally during an outage into the shared store (OutageFallback.reconcile). */
  reconcile(): Promise<void> {
    return this.outage.reconcile();
  }

  async refund(key: string, spent: Decision, options: ConsumeOptions = {}): Promise<void> {
    const cost = options.cost ?? 1;
    const policies = policySetOf(options, this.policies);
    assertValidKey(key);
    assertValidCost(cost);
    if (!spent.allowed || cost === 0) return;
    const nowMs = this.parts.clock();
    // A policy whose budget was whole again by now (its resetAtMs has passed) no longer counts
    // this spend, so it gets no refund: an Adjustment names no window, and a late refund would
    // come off the state as it is now, crediting calls made after the spend (for a fixed window,
    // the next window's). The store-level adjustment used to drop it by its window number.
    const refunds = policies.map((_, i) => ((spent.policies[i]?.resetAtMs ?? 0) > nowMs ? { atLeast: null, deltaUnits: -cost } : null));
    if (refunds.every((refund) => refund === null)) return;
    const { store } = this.parts;
    if (!store.shared) {
      await store.adjust(key, nowMs, policies, refunds);
      return;
    }
    const ledgerKey = `${setIdOf(policies)}|${key}`;
    this.refused.forget(ledgerKey);
    if (!spent.shared) {
      // Granted from the local states during an outage: given back there (ADR 0067), and the shared store is owed less.
      this.outage.refundLocally(ledgerKey, key, policies, cost, refunds, nowMs);
      return;
    }
    await this.parts.guard.run(() => store.adjust(key, nowMs, policies, refunds), options.budget, store.shardOf?.(key));
  }

  /** Every return of consume passes here, synchronously: metrics cost no extra promise. */
  private record(decision: Decision): Decision {
    this.parts.events?.recordDecision(this.backend, decision);
    return decision;
  }

  async whenReady(timeoutMs: number): Promise<boolean> {
    return this.parts.store.whenReady === undefined ? true : this.parts.store.whenReady(timeoutMs);
  }

  async close(): Promise<void> {
    // Before the store closes, bounded by the guard's deadline: units leased and not spent go back to the fleet.
    if (this.leases !== undefined) await this.leases.close(this.parts.clock);
    // Best effort, bounded by the guard's deadline: what this instance granted alone should outlive it.
    await this.outage.closing();
    if (this.parts.ownsFleet === true) await this.fleet?.close();
    await this.parts.store.close();
    await this.outage.close();
    this.refused.clear();
  }
}
