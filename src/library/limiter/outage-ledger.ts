import type { Adjustment } from '../window/algorithm';
import { adjustSet } from '../window/decide-set';
import type { PolicySet } from '../window/policy';

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
  /**
   * What the shared states were when this instance last heard from them, per
   * policy, plus the in-flight units that landed since: a floor the truth
   * is at least at, even on a store that restarted empty and took them there.
   */
  atLeast: readonly unknown[];
  /** The floor rose (in-flight units landed): worth writing even with no units of its own. */
  floorRaised: boolean;
  /** Units the store counted for calls refused here (a late commit): to be given back. */
  owedBack: number;
  /** Granted locally and known not to be counted by the shared store: to be written back. */
  units: number;
  /**
   * Granted locally while the shared call for the same request was sent and
   * given up on: it may still land. Not written back until it is known not to
   * have (settle), so a late commit is not counted twice (ADR 0046).
   */
  inFlight: number;
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

  /** Units granted locally whose shared call may still land; for tests and metrics. */
  get inFlightUnits(): number {
    let units = 0;
    for (const entry of this.granted.values()) units += entry.inFlight;
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

  /** Whether this instance granted `ledgerKey` anything locally whose states are still live. */
  grantedLive(ledgerKey: string, nowMs: number): boolean {
    const entry = this.granted.get(ledgerKey);
    return entry !== undefined && entry.expiresAtMs > nowMs;
  }

  /** The shared states a local window must start from (null per policy: none known). */
  floorFor(ledgerKey: string, policies: PolicySet): readonly unknown[] {
    return this.known.get(ledgerKey) ?? policies.map(() => null);
  }

  /**
   * Records units granted from the local window at `nowMs`, to be written
   * back later; negative units give some back. `expiresAtMs`: when the local
   * states the grant left are empty again. `inFlight`: the request's shared
   * call was sent and may still land; the units wait for `settle`.
   */
  grantLocally(ledgerKey: string, key: string, policies: PolicySet, units: number, expiresAtMs: number, nowMs: number, inFlight = false): void {
    const entry = this.granted.get(ledgerKey);
    // Only a grant whose states are still live takes more units. One already empty again (an
    // outage that outlasted its window) no longer limits anyone: merging into it would write its
    // units into the next window on reconciliation. A new grant replaces it, with today's floor.
    if (entry !== undefined && entry.expiresAtMs > nowMs) {
      if (inFlight && units > 0) entry.inFlight += units;
      else entry.units = Math.max(0, entry.units + units);
      if (expiresAtMs > entry.expiresAtMs) entry.expiresAtMs = expiresAtMs;
      return;
    }
    if (units <= 0) return;
    this.granted.delete(ledgerKey);
    bounded(this.granted);
    const atLeast = this.floorFor(ledgerKey, policies);
    this.granted.set(ledgerKey, { key, policies, atLeast, floorRaised: false, owedBack: 0, units: inFlight ? 0 : units, inFlight: inFlight ? units : 0, expiresAtMs });
  }

  /**
   * A call refused here whose shared call landed late and was counted there:
   * the store holds `units` nobody was admitted for, given back with the
   * next write-back of this key.
   */
  oweBack(ledgerKey: string, key: string, policies: PolicySet, units: number, expiresAtMs: number, nowMs: number): void {
    if (units <= 0 || expiresAtMs <= nowMs) return;
    let entry = this.granted.get(ledgerKey);
    if (entry === undefined || entry.expiresAtMs <= nowMs) {
      this.granted.delete(ledgerKey);
      bounded(this.granted);
      entry = { key, policies, atLeast: this.floorFor(ledgerKey, policies), floorRaised: false, owedBack: 0, units: 0, inFlight: 0, expiresAtMs };
      this.granted.set(ledgerKey, entry);
    }
    entry.owedBack += units;
    if (expiresAtMs > entry.expiresAtMs) entry.expiresAtMs = expiresAtMs;
  }

  /**
   * A shared call behind an in-flight grant has ended: `counted` when it
   * landed and spent the units on the store itself (nothing left to write),
   * otherwise the units join those to write back. A grant already dropped
   * (its states empty again) has nothing left to settle.
   */
  settle(ledgerKey: string, units: number, counted: boolean, nowMs: number): void {
    const entry = this.granted.get(ledgerKey);
    if (entry === undefined || entry.expiresAtMs <= nowMs) return;
    const settled = Math.min(units, entry.inFlight);
    if (settled <= 0) return;
    entry.inFlight -= settled;
    if (!counted) {
      entry.units += settled;
      return;
    }
    // Counted there, on whatever state the store then held: a store that had restarted empty holds
    // them without the floor, which the write-back's merge would then swallow. So they raise the floor.
    entry.atLeast = adjustSet(entry.atLeast, nowMs, entry.policies, entry.atLeast.map(() => ({ atLeast: null, deltaUnits: settled }))) ?? entry.atLeast;
    entry.floorRaised = true;
  }

  /**
   * Takes every reconciliation still worth writing at `nowMs` and forgets the
   * rest: units whose states are empty again no longer limit anyone. The
   * caller gives back what it could not write.
   */
  drain(nowMs: number): PendingReconciliation[] {
    const out: PendingReconciliation[] = [];
    for (const ledgerKey of [...this.granted.keys()]) {
      const pending = this.take(ledgerKey, nowMs);
      if (pending !== undefined) out.push(pending);
    }
    return out;
  }

  /**
   * This key's own reconciliation, if it has one still worth writing; it
   * leaves the ledger. None while units of the key are in flight.
   */
  take(ledgerKey: string, nowMs: number): PendingReconciliation | undefined {
    const entry = this.granted.get(ledgerKey);
    if (entry === undefined) return undefined;
    const live = entry.expiresAtMs > nowMs;
    // Not while a call of the key may still land: on a store that restarted empty it would land on
    // nothing, and a write-back that got there first would merge its floor over it (lost). Once
    // they have settled, the floor carries those that landed, so the one write-back is exact.
    if (live && entry.inFlight > 0) return undefined;
    this.granted.delete(ledgerKey);
    return (entry.units > 0 || entry.owedBack > 0 || entry.floorRaised) && live ? toPending(entry) : undefined;
  }

  /** Puts back a reconciliation that failed to write, merged with anything granted (or landed) since. */
  restore(ledgerKey: string, pending: PendingReconciliation, nowMs: number): void {
    const delta = pending.adjustments[0]?.deltaUnits ?? 0;
    const units = Math.max(0, delta);
    const owedBack = Math.max(0, -delta);
    const entry = this.granted.get(ledgerKey);
    if (entry !== undefined) {
      entry.units += units;
      entry.owedBack += owedBack;
      entry.atLeast = adjustSet(entry.atLeast, nowMs, entry.policies, pending.adjustments.map((a) => (a.atLeast === null ? null : { atLeast: a.atLeast, deltaUnits: 0 }))) ?? entry.atLeast;
      entry.floorRaised = true;
      if (pending.expiresAtMs > entry.expiresAtMs) entry.expiresAtMs = pending.expiresAtMs;
      return;
    }
    bounded(this.granted);
    this.granted.set(ledgerKey, {
      key: pending.key,
      policies: pending.policies,
      atLeast: pending.adjustments.map((a) => a.atLeast),
      units,
      owedBack,
      inFlight: 0,
      floorRaised: true,
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
    adjustments: entry.atLeast.map((atLeast) => ({ atLeast, deltaUnits: entry.units - entry.owedBack })),
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
