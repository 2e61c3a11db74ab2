import type { Adjustment } from './algorithms/algorithm';
import { adjustSet } from './decide-set';
import type { PolicySet } from './policy';

/** Keys remembered per map; past it the least recently used is forgotten (it only costs accuracy, never safety). */
export const MAX_LEDGER_KEYS = 100_000;

/** One key's locally granted units, waiting to be written into the shared states. */
export interface PendingReconciliation {
  readonly key: string;
  readonly policies: PolicySet;
  /** Per policy: merge with what this instance last knew, then spend the units granted locally. */
  readonly adjustments: readonly Adjustment<unknown>[];
  /** After this, the units no longer limit anyone (every local state they made is empty again); the write is dropped. */
  readonly expiresAtMs: number;
}

interface Granted {
  readonly key: string;
  readonly policies: PolicySet;
  /** What the shared states were when this instance last heard from them, per policy. */
  readonly atLeast: readonly unknown[];
  units: number;
  expiresAtMs: number;
}

/**
 * What this instance knows about shared states, so an outage does not hand
 * out a fresh budget: a local window starts from the last states the shared
 * store reported for that key, and what is granted locally is remembered and
 * written back (reconciled) once the store answers again. Without it two
 * instances in an outage admitted 28-29 calls a window at a limit of 10.
 *
 * No I/O and no clock: the limiter passes `nowMs` and does the writing.
 * Keyed by policy set and key (the limiter's ledger key), because a token's
 * tier may change mid-window. States are the algorithms' own values.
 */
export class OutageLedger {
  private readonly known = new Map<string, readonly unknown[]>();
  private readonly granted = new Map<string, Granted>();

  /** Units granted locally and not yet reconciled, for tests and metrics. */
  get pendingUnits(): number {
    let units = 0;
    for (const entry of this.granted.values()) units += entry.units;
    return units;
  }

  get hasPending(): boolean {
    return this.granted.size > 0;
  }

  /**
   * Remembers the shared states a reply (or a listener) reported. Merged with
   * what was known: a state only gets more spent, except with time, so an
   * older, more spent answer from a reply that overtook this one still counts.
   */
  observe(ledgerKey: string, states: readonly unknown[], policies: PolicySet, nowMs: number): void {
    const before = this.known.get(ledgerKey);
    let merged = states;
    if (before !== undefined) {
      this.known.delete(ledgerKey);
      merged = adjustSet(states, nowMs, policies, before.map((atLeast) => (atLeast === null ? null : { atLeast, deltaUnits: 0 }))) ?? states;
    }
    bounded(this.known);
    this.known.set(ledgerKey, merged);
  }

  /** The shared states a local window must start from (null per policy: none known). */
  floorFor(ledgerKey: string, policies: PolicySet): readonly unknown[] {
    return this.known.get(ledgerKey) ?? policies.map(() => null);
  }

  /**
   * Records units granted from the local window at `nowMs`, to be written
   * back later; negative units give some back. `expiresAtMs`: when the local
   * states the grant left are empty again.
   */
  grantLocally(ledgerKey: string, key: string, policies: PolicySet, units: number, expiresAtMs: number, nowMs: number): void {
    const entry = this.granted.get(ledgerKey);
    // Only a grant whose states are still live takes more units. One already empty again (an
    // outage that outlasted its window) no longer limits anyone: merging into it would write its
    // units into the next window on reconciliation. A new grant replaces it, with today's floor.
    if (entry !== undefined && entry.expiresAtMs > nowMs) {
      entry.units = Math.max(0, entry.units + units);
      if (expiresAtMs > entry.expiresAtMs) entry.expiresAtMs = expiresAtMs;
      return;
    }
    if (units <= 0) return;
    this.granted.delete(ledgerKey);
    bounded(this.granted);
    this.granted.set(ledgerKey, { key, policies, atLeast: this.floorFor(ledgerKey, policies), units, expiresAtMs });
  }

  /**
   * Takes every reconciliation still worth writing at `nowMs` and forgets the
   * rest: units whose states are empty again no longer limit anyone. The
   * caller gives back what it could not write.
   */
  drain(nowMs: number): PendingReconciliation[] {
    const out: PendingReconciliation[] = [];
    for (const [ledgerKey, entry] of this.granted) {
      this.granted.delete(ledgerKey);
      if (entry.units > 0 && entry.expiresAtMs > nowMs) out.push(toPending(entry));
    }
    return out;
  }

  /** This key's own reconciliation, if it has one still worth writing; it leaves the ledger. */
  take(ledgerKey: string, nowMs: number): PendingReconciliation | undefined {
    const entry = this.granted.get(ledgerKey);
    if (entry === undefined) return undefined;
    this.granted.delete(ledgerKey);
    return entry.units > 0 && entry.expiresAtMs > nowMs ? toPending(entry) : undefined;
  }

  /** Puts back a reconciliation that failed to write, merged with anything granted since. */
  restore(ledgerKey: string, pending: PendingReconciliation): void {
    const units = pending.adjustments[0]?.deltaUnits ?? 0;
    const entry = this.granted.get(ledgerKey);
    if (entry !== undefined) {
      entry.units += units;
      if (pending.expiresAtMs > entry.expiresAtMs) entry.expiresAtMs = pending.expiresAtMs;
      return;
    }
    bounded(this.granted);
    this.granted.set(ledgerKey, {
      key: pending.key,
      policies: pending.policies,
      atLeast: pending.adjustments.map((a) => a.atLeast),
      units,
      expiresAtMs: pending.expiresAtMs,
    });
  }

  clear(): void {
    this.known.clear();
    this.granted.clear();
  }
}

function toPending(entry: Granted): PendingReconciliation {
  return {
    key: entry.key,
    policies: entry.policies,
    adjustments: entry.atLeast.map((atLeast) => ({ atLeast, deltaUnits: entry.units })),
    expiresAtMs: entry.expiresAtMs,
  };
}

function bounded<V>(map: Map<string, V>): void {
  while (map.size >= MAX_LEDGER_KEYS) {
    const oldest = map.keys().next();
    if (oldest.done) return;
    map.delete(oldest.value);
  }
}
