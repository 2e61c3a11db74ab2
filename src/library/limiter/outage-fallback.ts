import type { Logger } from '../../shared/logger';
import type { BackendGuard, GuardedResult, LateOutcome } from './backend-guard';
import { setExpiresAtMs } from '../window/decide-set';
import type { Decision } from '../window/decision';
import type { BackendName, LimitStore, StoreDecision } from './limit-store';
import { LandingTracker } from './landing-tracker';
import { inCallerUnits, toDecision } from './limiter-decisions';
import type { FleetEstimate } from './fleet-estimate';
import { outageWeight } from './outage-share';
import { MIN_OUTAGE_RETRY_AFTER_MS } from './outage-guard';
import { OutageLedger, type PendingReconciliation } from './outage-ledger';
import { setIdOf } from '../window/policy-choice';
import type { Adjustment } from '../window/algorithm';
import type { PolicySet } from '../window/policy';
import { MemoryWindowStore } from '../memory/memory-store';
import type { WaitBudget } from './wait-budget';

/** Reconciliation writes in flight at once when a store comes back, so recovery is not a thundering herd. */
const RECONCILE_CONCURRENCY = 32;

export interface OutageFallbackParts {
  readonly store: LimitStore;
  readonly guard: BackendGuard;
  readonly clock: () => number;
  readonly logger: Logger;
  readonly backend: BackendName;
  /** The live instances an outage's local windows share each limit among (ADR 0067); undefined: each counts all of it. */
  readonly fleet: FleetEstimate | undefined;
}

/**
 * What a limiter on a shared store keeps for the times the store does not
 * answer: this instance's own windows, the ledger of what they granted, the
 * shared calls given up on that may still land, and the write-back of what
 * was granted once the store answers again.
 *
 * The local windows start from the last states the shared store reported for
 * the key, and what they grant is written back into the shared store when it
 * answers again, so an outage admits about the limit plus what the other
 * instances granted meanwhile, not a fresh limit per instance; with a fleet
 * estimate, this instance's share of it (ADR 0067). A call given up on is
 * settled by what it did on the store once that is known, so the shared
 * count is what was admitted, once (ADR 0046).
 */
export class OutageFallback {
  private readonly local = new MemoryWindowStore();
  private readonly ledger = new OutageLedger();
  /** Per ledger key, calls given up on that may still land (consumes and write-backs). */
  private readonly landing = new LandingTracker();
  private reconciling: Promise<void> | undefined;

  constructor(private readonly parts: OutageFallbackParts) {}

  /** Write-backs are owed, or calls given up on may still land: a hot key's lease must not answer meanwhile. */
  get unsettled(): boolean {
    return this.ledger.hasPending || this.landing.size > 0;
  }

  /** Units granted from local states that the shared store has not been told of yet. */
  get unreconciledUnits(): number {
    return this.ledger.pendingUnits;
  }

  /** Units granted locally whose shared call may still land on the store; written back only if it does not. */
  get inFlightUnits(): number {
    return this.ledger.inFlightUnits;
  }

  /** The shared store answered for the key: its states are the floor of the next outage, and what is owed goes back now. */
  answered(ledgerKey: string, states: readonly unknown[], policies: PolicySet, nowMs: number): void {
    this.ledger.observe(ledgerKey, states, policies, nowMs);
    if (this.ledger.hasPending) void this.reconcile();
  }

  /**
   * A key that was granted calls locally during an outage first writes them
   * back, then asks: otherwise its first call after the outage would be
   * judged against states that do not yet know them.
   */
  async consumeShared(key: string, ledgerKey: string, nowMs: number, policies: PolicySet, cost: number, budget: WaitBudget | undefined): Promise<GuardedResult<StoreDecision>> {
    const { guard, store } = this.parts;
    if (this.landing.size > 0 && this.landing.inFlight(ledgerKey)) {
      // Not sent, so it cannot overtake them: answered from the local window, which counts them.
      return { ok: false, cause: 'outage', retryAfterMs: MIN_OUTAGE_RETRY_AFTER_MS };
    }
    const owed = this.ledger.take(ledgerKey, nowMs);
    if (owed !== undefined) {
      const written = await guard.run(() => store.adjust(key, nowMs, owed.policies, owed.adjustments), budget, store.shardOf?.(key));
      if (!written.ok) {
        this.restoreUnlessLanded(ledgerKey, owed, written);
        // Not the write-back's late outcome: the consume that never ran has none.
        return { ok: false, cause: written.cause, error: written.error, retryAfterMs: written.retryAfterMs };
      }
    }
    return guard.run(() => store.consume(key, nowMs, policies, cost), budget, store.shardOf?.(key));
  }

  /** Fail-closed refused the call; if the shared call given up on (`late`) counted it anyway, it is given back. */
  refusedWhileLate(ledgerKey: string, key: string, policies: PolicySet, cost: number, late: Promise<LateOutcome<StoreDecision>> | undefined): void {
    if (late !== undefined && cost > 0) void late.then((outcome) => this.settleLate(ledgerKey, key, policies, cost, false, outcome));
  }

  /** Fail-open: the call decided by this instance's window for the key, seeded from the shared states last seen. */
  decideLocally(key: string, ledgerKey: string, nowMs: number, policies: PolicySet, cost: number, late: Promise<LateOutcome<StoreDecision>> | undefined): Decision {
    const seen = this.parts.store.lastSeen?.(key, policies);
    if (seen !== undefined) this.ledger.observe(ledgerKey, seen, policies, nowMs);
    const floor = this.ledger.floorFor(ledgerKey, policies);
    this.local.adjustSync(ledgerKey, nowMs, policies, floor.map((atLeast) => (atLeast === null ? null : { atLeast, deltaUnits: 0 })));
    // This instance's share of what the key has left, not all of it (ADR 0067); the ledger keeps the real cost.
    // A read is weighed as a call of one unit, so the remaining it reports is in the caller's calls too.
    const { fleet } = this.parts;
    const weight = fleet === undefined ? 1 : outageWeight(policies, Math.max(1, cost), fleet.current());
    let local = this.local.consumeSync(ledgerKey, nowMs, policies, cost * weight);
    // Less left than one call's share: the instance's first call still gets it, so the fleet admits at most
    // max(remaining, instances × cost), never none at all while the key had units left.
    if (!local.allowed && weight > 1 && cost > 0 && !this.ledger.grantedLive(ledgerKey, nowMs)) local = this.local.consumeSync(ledgerKey, nowMs, policies, cost);
    if (cost > 0) {
      if (local.allowed) this.ledger.grantLocally(ledgerKey, key, policies, cost, setExpiresAtMs(local.states, policies) ?? nowMs, nowMs, late !== undefined);
      if (late !== undefined) this.landing.track(ledgerKey, late.then((outcome) => this.settleLate(ledgerKey, key, policies, cost, local.allowed, outcome)));
    }
    return inCallerUnits(toDecision(local, policies, false, local.allowed ? 'local_fallback' : 'limit'), weight);
  }

  /** A refund of a call granted here during an outage: given back to the local window (what it was charged), and owed less. */
  refundLocally(ledgerKey: string, key: string, policies: PolicySet, cost: number, refunds: readonly (Adjustment<unknown> | null)[], nowMs: number): void {
    const { fleet } = this.parts;
    const weight = fleet === undefined ? 1 : outageWeight(policies, cost, fleet.current());
    this.local.adjustSync(ledgerKey, nowMs, policies, weight === 1 ? refunds : refunds.map((refund) => (refund === null ? null : { atLeast: null, deltaUnits: -cost * weight })));
    this.ledger.grantLocally(ledgerKey, key, policies, -cost, nowMs, nowMs);
  }

  /**
   * Writes locally granted units into the shared states, once at a time.
   * Resolves when done; a write that fails is kept for the next success.
   * A write that timed out is retried only once it is known not to have
   * landed, so a late commit is not counted twice (ADR 0046).
   */
  reconcile(): Promise<void> {
    this.reconciling ??= this.writeBack().finally(() => {
      this.reconciling = undefined;
    });
    return this.reconciling;
  }

  /** Before the store closes, bounded by the guard's deadline: what this instance granted alone should outlive it. */
  async closing(): Promise<void> {
    if (this.ledger.hasPending) await this.reconcile();
  }

  async close(): Promise<void> {
    await this.local.close();
    this.ledger.clear();
  }

  /**
   * A shared consume given up on (timed out) has ended on the store. What it
   * did there decides what is owed: the units of a call granted here are
   * written back only if the store did not count them itself; a call refused
   * here (or fail-closed) that the store counted anyway is given back, so the
   * shared count is what was admitted, once (ADR 0046).
   */
  private settleLate(ledgerKey: string, key: string, policies: PolicySet, cost: number, grantedLocally: boolean, outcome: LateOutcome<StoreDecision>): void {
    const nowMs = this.parts.clock();
    const counted = outcome.landed && outcome.value.allowed;
    if (outcome.landed) this.ledger.observe(ledgerKey, outcome.value.states, policies, nowMs);
    if (grantedLocally) {
      this.ledger.settle(ledgerKey, cost, counted, nowMs);
      if (!counted) void this.reconcile();
      return;
    }
    if (!outcome.landed || !counted) return;
    // Through the ledger, not a refund call of its own: the store may be down again by now.
    this.ledger.oweBack(ledgerKey, key, policies, cost, setExpiresAtMs(outcome.value.states, policies) ?? nowMs, nowMs);
    void this.reconcile();
  }

  /** A write-back that failed goes back to the ledger, unless it was given up on and landed after all. */
  private restoreUnlessLanded(ledgerKey: string, pending: PendingReconciliation, failure: Extract<GuardedResult<void>, { ok: false }>): void {
    if (failure.late === undefined) {
      this.ledger.restore(ledgerKey, pending, this.parts.clock());
      return;
    }
    this.landing.track(
      ledgerKey,
      failure.late.then((outcome) => {
        if (outcome.landed) return;
        this.ledger.restore(ledgerKey, pending, this.parts.clock());
        void this.reconcile();
      }),
    );
  }

  private async writeBack(): Promise<void> {
    const { guard, store, logger } = this.parts;
    const nowMs = this.parts.clock();
    const pending = this.ledger.drain(nowMs);
    let written = 0;
    let units = 0;
    for (let i = 0; i < pending.length; i += RECONCILE_CONCURRENCY) {
      await Promise.all(
        pending.slice(i, i + RECONCILE_CONCURRENCY).map(async (item: PendingReconciliation) => {
          const result = await guard.run(() => store.adjust(item.key, nowMs, item.policies, item.adjustments), undefined, store.shardOf?.(item.key));
          if (result.ok) {
            written++;
            units += item.adjustments[0]?.deltaUnits ?? 0;
          } else {
            this.restoreUnlessLanded(`${setIdOf(item.policies)}|${item.key}`, item, result);
          }
        }),
      );
    }
    if (written > 0) {
      logger.info('calls granted from the local window during an outage were written back to the shared store', {
        event: 'ratelimit.reconciled',
        backend: this.parts.backend,
        keys: written,
        units,
        keysLeft: pending.length - written,
      });
    }
  }
}
