import type { WindowDecision } from './decision';
import { algorithmOf, type PolicySet } from './policy';

/**
 * Leases for hot keys (ADR 0066), pure: no clock, no I/O. An instance takes a
 * share of a key's remaining units in one ordinary atomic consume (cost =
 * share), so the shared count is charged before any of them is admitted and
 * the fleet can never admit more than the limit. It then answers from the
 * lease locally until the lease runs out or its window ends.
 */

export interface HotKeyLeaseOptions {
  /** Decisions per second on this instance, for one key, at which the key turns hot. Default 200. */
  readonly hotRatePerSecond?: number;
  /** The most units one lease takes. Default 100. */
  readonly maxLeaseUnits?: number;
  /** k in share = remaining / (k × instances): the larger, the smaller the shares near the limit. Default 4. */
  readonly shareDivisor?: number;
}

export const DEFAULT_HOT_RATE_PER_SECOND = 200;
export const DEFAULT_MAX_LEASE_UNITS = 100;
export const DEFAULT_SHARE_DIVISOR = 4;
const RATE_BUCKET_MS = 1000;

/** Only fixed windows lease: a unit taken early and spent later in the same window is the same unit (ADR 0066 says why not the others). */
export function canLease(policies: PolicySet): boolean {
  return policies.every((policy) => algorithmOf(policy) === 'fixed-window');
}

/** Decisions counted in the current one-second bucket, and the last full bucket's count. */
export interface RateMeter {
  readonly bucketStartMs: number;
  readonly count: number;
  readonly lastCount: number;
}

export function meterTick(meter: RateMeter | undefined, nowMs: number): RateMeter {
  const bucketStartMs = nowMs - (nowMs % RATE_BUCKET_MS);
  if (meter === undefined) return { bucketStartMs, count: 1, lastCount: 0 };
  if (bucketStartMs === meter.bucketStartMs) return { ...meter, count: meter.count + 1 };
  // A gap of more than one bucket means the last full second had nothing.
  const lastCount = bucketStartMs - meter.bucketStartMs === RATE_BUCKET_MS ? meter.count : 0;
  return { bucketStartMs, count: 1, lastCount };
}

/** Hot: this second or the last full one reached the rate. */
export function isHot(meter: RateMeter, hotRatePerSecond: number): boolean {
  return meter.count >= hotRatePerSecond || meter.lastCount >= hotRatePerSecond;
}

/**
 * The share to take: clamp(floor(remaining / (k × instances)), 1, max), and
 * never more than remaining (a take larger than what is left is refused).
 * Shrinks to 1 near the limit, so what instances hold unused at the window's
 * end (the under-admission) is at most about remaining / k.
 */
export function leaseShare(remaining: number, instances: number, shareDivisor: number, maxLeaseUnits: number): number {
  if (remaining <= 0) return 0;
  const share = Math.floor(remaining / (shareDivisor * Math.max(1, instances)));
  return Math.min(remaining, Math.max(1, Math.min(maxLeaseUnits, share)));
}

/**
 * Instances taking from the key, estimated from the shared count: between two
 * takes of ours the count grew by `spentDelta`, of which `ownUnits` were ours.
 */
export function instancesSeen(spentDelta: number, ownUnits: number, previous: number): number {
  if (ownUnits <= 0 || spentDelta < ownUnits) return Math.max(1, previous);
  return Math.max(1, Math.min(10_000, Math.round(spentDelta / ownUnits)));
}

/** Units this instance holds for one key, taken from the shared count. */
export interface Lease {
  readonly unitsLeft: number;
  /** When the lease's units stop counting: the earliest reset of the set's windows. */
  readonly expiresAtMs: number;
  /** Per policy, what the shared count had left after the take (without our units). */
  readonly decisions: readonly WindowDecision[];
  /** Per policy, the states the take reported (for the refusal cache and the outage ledger). */
  readonly states: readonly unknown[];
}

/** A lease from an allowed take of `share` units. */
export function leaseFrom(share: number, decisions: readonly WindowDecision[], states: readonly unknown[]): Lease {
  const expiresAtMs = Math.min(...decisions.map((decision) => decision.resetAtMs));
  return { unitsLeft: share, expiresAtMs, decisions, states };
}

export interface LocalAnswer {
  readonly lease: Lease;
  /** Per policy, as one instance alone would have been told: the shared remaining plus our unused units. */
  readonly decisions: readonly WindowDecision[];
}

/** Answers `cost` from the lease, or undefined: it expired or holds too little (renew first). */
export function answerFromLease(lease: Lease | undefined, nowMs: number, cost: number): LocalAnswer | undefined {
  if (lease === undefined || nowMs >= lease.expiresAtMs || lease.unitsLeft < cost) return undefined;
  const unitsLeft = lease.unitsLeft - cost;
  const decisions = lease.decisions.map((decision) => ({ ...decision, allowed: true, retryAfterMs: 0, remaining: decision.remaining + unitsLeft }));
  return { lease: { ...lease, unitsLeft }, decisions };
}

/** Units to give back now: the unused units of a lease whose window has not ended (after it, they are gone with the window). */
export function unitsToReturn(lease: Lease | undefined, nowMs: number): number {
  return lease === undefined || nowMs >= lease.expiresAtMs ? 0 : lease.unitsLeft;
}
