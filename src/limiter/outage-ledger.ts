import { windowNumberAt, windowNumberEndingAt, type WindowAdjustment } from './algorithms/fixed-window';
import type { WindowDecision } from './decision';
import type { RateLimitPolicy } from './policy';

/** Keys remembered per map; past it the least recently used is forgotten (it only costs accuracy, never safety). */
export const MAX_LEDGER_KEYS = 100_000;

/** One key's locally granted units, waiting to be written into the shared window. */
export interface PendingReconciliation {
  readonly key: string;
  readonly policy: RateLimitPolicy;
  readonly adjustment: WindowAdjustment;
}

interface Known {
  windowNumber: number;
  count: number;
}

interface Granted {
  readonly key: string;
  readonly policy: RateLimitPolicy;
  readonly windowNumber: number;
  /** What the shared window had spent when this instance last heard from it. */
  readonly atLeastCount: number;
  units: number;
}

/**
 * What this instance knows about shared windows, so an outage does not hand
 * out a fresh budget: a local window starts from the last count the shared
 * store reported for that key, and what is granted locally is remembered and
 * written back (reconciled) once the store answers again. Without it two
 * instances in an outage admitted 28-29 calls a window at a limit of 10.
 *
 * No I/O and no clock: the limiter passes `nowMs` and does the writing.
 * Keyed by policy and key, because a token's tier may change mid-window.
 */
export class OutageLedger {
  private readonly known = new Map<string, Known>();
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

  /** Remembers the spent count a shared decision implies. */
  observeShared(ledgerKey: string, decision: WindowDecision, policy: RateLimitPolicy): void {
    // remaining is clamped at 0, so a window spent past its limit reads as exactly the limit: enough to refuse.
    this.observeCount(ledgerKey, windowNumberEndingAt(decision.resetAtMs, policy.windowMs), decision.limit - decision.remaining);
  }

  /** Remembers a window's spent count seen some other way (a store's listener). */
  observeCount(ledgerKey: string, windowNumber: number, count: number): void {
    const entry = this.known.get(ledgerKey);
    if (entry !== undefined) {
      this.known.delete(ledgerKey);
      if (entry.windowNumber === windowNumber && entry.count > count) {
        // An older, higher answer from a reply that overtook this one: counts within a window only grow.
        this.known.set(ledgerKey, entry);
        return;
      }
    }
    bounded(this.known);
    this.known.set(ledgerKey, { windowNumber, count });
  }

  /**
   * The count the local window must start from at `nowMs`: the last shared
   * count known for this window (0 when the window is new to us), plus what
   * this instance already granted locally in it.
   */
  floorFor(ledgerKey: string, nowMs: number, policy: RateLimitPolicy): WindowAdjustment {
    const windowNumber = windowNumberAt(nowMs, policy.windowMs);
    return { windowNumber, atLeastCount: this.knownCount(ledgerKey, windowNumber), deltaUnits: 0 };
  }

  /** Records units granted from the local window, to be written back later; negative units give some back. */
  grantLocally(ledgerKey: string, key: string, policy: RateLimitPolicy, windowNumber: number, units: number): void {
    const entry = this.granted.get(ledgerKey);
    if (entry !== undefined && entry.windowNumber === windowNumber) {
      entry.units = Math.max(0, entry.units + units);
      return;
    }
    if (units <= 0) return;
    this.granted.delete(ledgerKey);
    bounded(this.granted);
    this.granted.set(ledgerKey, { key, policy, windowNumber, atLeastCount: this.knownCount(ledgerKey, windowNumber), units });
  }

  /**
   * Takes every reconciliation still worth writing at `nowMs` (their window
   * has not passed) and forgets the rest: a passed window's count no longer
   * limits anyone. The caller gives back what it could not write.
   */
  drain(nowMs: number): PendingReconciliation[] {
    const out: PendingReconciliation[] = [];
    for (const [ledgerKey, entry] of this.granted) {
      this.granted.delete(ledgerKey);
      if (entry.windowNumber !== windowNumberAt(nowMs, entry.policy.windowMs)) continue;
      out.push(toPending(entry));
    }
    return out;
  }

  /** This key's own reconciliation, if it has one still worth writing; it leaves the ledger. */
  take(ledgerKey: string, nowMs: number): PendingReconciliation | undefined {
    const entry = this.granted.get(ledgerKey);
    if (entry === undefined) return undefined;
    this.granted.delete(ledgerKey);
    if (entry.windowNumber !== windowNumberAt(nowMs, entry.policy.windowMs)) return undefined;
    return toPending(entry);
  }

  /** Puts back a reconciliation that failed to write, merged with anything granted since. */
  restore(ledgerKey: string, pending: PendingReconciliation): void {
    const { windowNumber, atLeastCount, deltaUnits } = pending.adjustment;
    const entry = this.granted.get(ledgerKey);
    if (entry !== undefined && entry.windowNumber === windowNumber) {
      entry.units += deltaUnits;
      return;
    }
    bounded(this.granted);
    this.granted.set(ledgerKey, { key: pending.key, policy: pending.policy, windowNumber, atLeastCount, units: deltaUnits });
  }

  /** The last shared count known for that window of the key; 0 when none is known for it. */
  private knownCount(ledgerKey: string, windowNumber: number): number {
    const known = this.known.get(ledgerKey);
    return known !== undefined && known.windowNumber === windowNumber ? known.count : 0;
  }

  clear(): void {
    this.known.clear();
    this.granted.clear();
  }
}

function toPending(entry: Granted): PendingReconciliation {
  return {
    key: entry.key,
    policy: entry.policy,
    adjustment: { windowNumber: entry.windowNumber, atLeastCount: entry.atLeastCount, deltaUnits: entry.units },
  };
}

function bounded<V>(map: Map<string, V>): void {
  while (map.size >= MAX_LEDGER_KEYS) {
    const oldest = map.keys().next();
    if (oldest.done) return;
    map.delete(oldest.value);
  }
}
