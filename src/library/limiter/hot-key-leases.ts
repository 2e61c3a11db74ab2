import type { GuardedResult } from './backend-guard';
import type { StoreDecision } from './limit-store';
import type { PolicySet } from '../window/policy';
import {
  DEFAULT_HOT_RATE_PER_SECOND,
  DEFAULT_MAX_LEASE_UNITS,
  DEFAULT_SHARE_DIVISOR,
  answerFromLease,
  canLease,
  instancesSeen,
  isHot,
  leaseFrom,
  leaseShare,
  meterTick,
  unitsToReturn,
  type HotKeyLeaseOptions,
  type Lease,
  type LocalAnswer,
  type RateMeter,
} from '../window/hot-key-lease';

/** One shared consume of `cost` units, through the guard (the limiter supplies it). */
export type TakeUnits = (cost: number) => Promise<GuardedResult<StoreDecision>>;
/** Gives `units` back to the shared count, best effort; close awaits what it returns. */
export type ReturnUnits = (units: number) => Promise<unknown> | void;

interface Entry {
  meter: RateMeter;
  contended: boolean;
  lease?: Lease;
  renewing?: Promise<void>;
  instances: number;
  lastSpent?: number;
  /** How this key's lease goes back to the shared count, for close. */
  giveBack?: ReturnUnits;
}

/** Keys metered at most; past it the oldest half is dropped. */
const MAX_ENTRIES = 10_000;

/**
 * In-flight leases of hot keys on one limiter (ADR 0066): one renewal per key
 * at a time, callers that find the lease empty wait on it. The sizing and
 * the local answer are pure (src/library/window/hot-key-lease.ts).
 */
export class HotKeyLeases {
  private readonly entries = new Map<string, Entry>();
  private readonly hotRatePerSecond: number;
  private readonly maxLeaseUnits: number;
  private readonly shareDivisor: number;
  private closed = false;

  constructor(options: HotKeyLeaseOptions = {}) {
    this.hotRatePerSecond = options.hotRatePerSecond ?? DEFAULT_HOT_RATE_PER_SECOND;
    this.maxLeaseUnits = options.maxLeaseUnits ?? DEFAULT_MAX_LEASE_UNITS;
    this.shareDivisor = options.shareDivisor ?? DEFAULT_SHARE_DIVISOR;
    for (const [name, value] of Object.entries({ hotRatePerSecond: this.hotRatePerSecond, maxLeaseUnits: this.maxLeaseUnits, shareDivisor: this.shareDivisor })) {
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`hot-key lease ${name} must be a positive integer, got ${value}`);
    }
  }

  /** Another writer kept winning this key: it is hot whatever its rate here. */
  contended(ledgerKey: string): void {
    const entry = this.entries.get(ledgerKey);
    if (entry !== undefined) entry.contended = true;
  }

  /**
   * The decision for a hot key, from its lease (renewed when empty), or
   * undefined: the key is not hot or cannot lease, so the caller asks the
   * store as usual. A failed take is returned as it is.
   */
  async consume(ledgerKey: string, nowMs: number, policies: PolicySet, cost: number, take: TakeUnits, giveBack: ReturnUnits): Promise<GuardedResult<StoreDecision> | undefined> {
    if (cost === 0 || this.closed || !canLease(policies)) return undefined;
    const entry = this.meter(ledgerKey, nowMs);
    if (!entry.contended && !isHot(entry.meter, this.hotRatePerSecond)) {
      this.giveBackLease(entry, nowMs, giveBack);
      return undefined;
    }
    // A renewal in flight: wait for it, then answer from what it brought (twice at most, then ask alone).
    for (let round = 0; round < 3; round++) {
      const answer = answerFromLease(entry.lease, nowMs, cost);
      if (answer !== undefined) {
        return this.spend(entry, answer);
      }
      if (entry.renewing === undefined) break;
      await entry.renewing;
    }
    // Closing: a lease taken now would only be given back at once.
    if (entry.renewing !== undefined || this.closed) return undefined;
    entry.giveBack = giveBack;
    let result: GuardedResult<StoreDecision> | undefined;
    entry.renewing = this.renew(entry, nowMs, policies, cost, take).then((r) => {
      result = r;
    }).finally(() => {
      entry.renewing = undefined;
    });
    await entry.renewing;
    if (result === undefined || !result.ok || !result.value.allowed) return result;
    const answer = answerFromLease(entry.lease, nowMs, cost);
    if (answer === undefined) return undefined;
    return this.spend(entry, answer);
  }

  private spend(entry: Entry, answer: LocalAnswer): GuardedResult<StoreDecision> {
    entry.lease = answer.lease;
    return { ok: true, value: { allowed: true, decisions: answer.decisions, states: answer.lease.states } };
  }

  /** Takes a new lease; what the old one left is gone with its window or spent. Returns the take's result. */
  private async renew(entry: Entry, nowMs: number, policies: PolicySet, cost: number, take: TakeUnits): Promise<GuardedResult<StoreDecision>> {
    const remaining = Math.min(...(entry.lease?.decisions ?? []).map((d) => d.remaining), policies[0].limit);
    const stillValid = entry.lease !== undefined && nowMs < entry.lease.expiresAtMs;
    const share = Math.max(cost, leaseShare(stillValid ? remaining : Math.min(...policies.map((p) => p.limit)), entry.instances, this.shareDivisor, this.maxLeaseUnits));
    let taken = share;
    let result = await take(share);
    if (result.ok && !result.value.allowed && share > cost) {
      // Fewer left than the share: take what the answer says is left, at least the call's own cost.
      const left = Math.min(...result.value.decisions.map((d) => d.remaining));
      if (left >= cost) {
        taken = left;
        result = await take(left);
      }
    }
    if (!result.ok) return result;
    if (!result.value.allowed) {
      entry.lease = undefined;
      return result;
    }
    const spent = policies[0].limit - (result.value.decisions[0]?.remaining ?? 0);
    if (entry.lastSpent !== undefined && spent >= entry.lastSpent) entry.instances = instancesSeen(spent - entry.lastSpent, taken, entry.instances);
    entry.lastSpent = spent;
    entry.lease = leaseFrom(taken, result.value.decisions, result.value.states);
    return result;
  }

  private meter(ledgerKey: string, nowMs: number): Entry {
    let entry = this.entries.get(ledgerKey);
    if (entry === undefined) {
      if (this.entries.size >= MAX_ENTRIES) this.evict();
      entry = { meter: meterTick(undefined, nowMs), contended: false, instances: 1 };
      this.entries.set(ledgerKey, entry);
      return entry;
    }
    const before = entry.meter.bucketStartMs;
    entry.meter = meterTick(entry.meter, nowMs);
    // Contention marks a key hot until a quiet second.
    if (entry.meter.bucketStartMs !== before && entry.meter.lastCount < this.hotRatePerSecond) entry.contended = false;
    return entry;
  }

  private giveBackLease(entry: Entry, nowMs: number, giveBack: ReturnUnits): void {
    const units = unitsToReturn(entry.lease, nowMs);
    entry.lease = undefined;
    if (units > 0 && entry.renewing === undefined) void giveBack(units);
  }

  /**
   * Stops leasing and gives back what every lease still holds, so the units
   * of an instance that shuts down within the window are not lost to the
   * fleet (ADR 0066). Renewals in flight land first (their callers spend
   * from them); each give-back goes through the limiter's guard, so this is
   * bounded by its deadline. Resolves when every give-back has settled.
   */
  async close(clock: () => number): Promise<void> {
    this.closed = true;
    const renewing = [...this.entries.values()].flatMap((entry) => (entry.renewing === undefined ? [] : [entry.renewing]));
    if (renewing.length > 0) await Promise.allSettled(renewing);
    const nowMs = clock();
    const returns: (Promise<unknown> | void)[] = [];
    for (const entry of this.entries.values()) {
      const units = unitsToReturn(entry.lease, nowMs);
      entry.lease = undefined;
      if (units > 0 && entry.giveBack !== undefined) returns.push(entry.giveBack(units));
    }
    this.entries.clear();
    await Promise.allSettled(returns);
  }

  /** Dropped leases expire with their window: within the under-admission bound of ADR 0066. */
  private evict(): void {
    let dropped = 0;
    for (const [key, entry] of this.entries) {
      if (dropped >= MAX_ENTRIES / 2) break;
      if (entry.renewing !== undefined) continue;
      this.entries.delete(key);
      dropped++;
    }
  }

  /** Units held in leases now, for tests and metrics. */
  get heldUnits(): number {
    let units = 0;
    for (const entry of this.entries.values()) units += entry.lease?.unitsLeft ?? 0;
    return units;
  }
}
