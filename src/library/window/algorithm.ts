import type { WindowDecision } from './decision';

/**
 * What every rate-limit algorithm is: a value with pure functions over a small
 * stored state. No clock and no I/O: time comes in as `nowMs`, the state comes
 * in as read from a store, and what to write comes back as `next`. Stores only
 * make one call atomic (a transaction, a Lua twin, a Map).
 *
 * Shared promises, held by test/unit/algorithms/contract.test.ts:
 * - a refused call writes nothing (`next` is null), so retrying during a
 *   refusal never pushes the reset further away;
 * - `cost` 0 reads without spending (allowed, `next` null);
 * - a caller whose clock is behind the stored state is answered as if it were
 *   at the state's time: a lagging clock never mints capacity;
 * - `retryAfterMs` of a refusal is exact: the same call is still refused at
 *   `nowMs + retryAfterMs - 1` and allowed at `nowMs + retryAfterMs`, if
 *   nothing else happens in between;
 * - all arithmetic is on integers (ms, whole units, or units scaled to whole
 *   numbers), so the TypeScript function and its Lua twin agree bit for bit.
 *
 * A stored state is meaningful only under the params that wrote it; a store
 * keys state by policy, so a changed policy starts from empty.
 *
 * Inputs are validated by the caller (`assertValidLimitParams`,
 * `assertValidCost` in policy.ts); the algorithms do not re-check them.
 */

export type AlgorithmName = 'fixed-window' | 'sliding-window' | 'sliding-log' | 'token-bucket' | 'leaky-bucket';

/** Every name, in the order the docs list them; `fixed-window` is the default. */
export const ALGORITHM_NAMES: readonly AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket'];

/** The algorithms whose `limit` is a burst (the most at once) and whose quota is a rate; the windows' `limit` is their quota. */
export const BURST_ALGORITHMS: readonly AlgorithmName[] = ['token-bucket', 'leaky-bucket'];

/** Whether `limit` is a burst for this algorithm (the one place that says so). */
export function hasBurst(algorithm: AlgorithmName): boolean {
  return BURST_ALGORITHMS.includes(algorithm);
}

export interface LimitParams {
  /** Units of cost allowed per `windowMs` (windows), or refilled per `windowMs` (buckets). */
  readonly limit: number;
  readonly windowMs: number;
  /** The buckets only: the most units allowed at once. Default: `limit`. Ignored by the windows. */
  readonly burst?: number;
}

export interface AlgorithmResult<S> {
  /**
   * `limit` is the most `remaining` can ever be (a window's limit, a bucket's
   * burst); `resetAtMs` is documented per algorithm; `retryAfterMs` is 0 when
   * allowed, otherwise exact (see above) for a cost that can fit at all.
   */
  readonly decision: WindowDecision;
  /** The state to store; null = nothing to write (a refusal, a cost-0 read). */
  readonly next: S | null;
}

export interface Adjustment<S> {
  /** A state known to be no more spent than the truth (what this instance last saw), or null. */
  readonly atLeast: S | null;
  /** Units to spend after the merge; negative refunds. Must be an integer. */
  readonly deltaUnits: number;
}

export interface Algorithm<S> {
  readonly name: AlgorithmName;
  decide(state: S | null, nowMs: number, params: LimitParams, cost: number): AlgorithmResult<S>;
  /**
   * Unconditional correction: merge with a state known to be no more spent
   * than the truth (atLeast: take the more spent of the two), then spend
   * deltaUnits (negative refunds, never below empty). Null = nothing changes.
   * Used to refund a reservation and to write back calls granted locally
   * during an outage. Spending may go past the limit: the units were spent.
   */
  adjust(state: S | null, nowMs: number, params: LimitParams, adjustment: Adjustment<S>): S | null;
  /** Epoch ms after which the stored state is equivalent to empty (for TTLs and expiry sweeps). */
  expiresAtMs(state: S, params: LimitParams): number;
  /**
   * The largest cost that can ever be allowed (a window's limit, a bucket's
   * burst). A larger cost is refused by `decide` forever, so callers refuse it
   * up front (a 4xx naming this figure) instead of sending the client to retry.
   * `decide` still answers such a cost safely: refused, nothing written,
   * `retryAfterMs` the time until the budget is fully back (at least 1 ms),
   * which is a hint only, not a promise.
   */
  maxCost(params: LimitParams): number;
  /** Plain words for integrators, e.g. "at most 120 in any minute". */
  describe(params: LimitParams): string;
  /** Validates the stored shape read back from a store (junk → null), so a hand-edited node never breaks a decision. */
  parseState(value: unknown): S | null;
  /**
   * Optional, with `unpack`: the state in a compact form for a store that
   * keeps values in this process (the memory store), where a state that grows
   * with the limit would otherwise cost its JavaScript objects. Lossless:
   * unpack(pack(s)) is s, field for field. Absent: the state is kept as it is.
   */
  pack?(state: S): unknown;
  unpack?(packed: unknown): S;
}

/** Throws a RangeError naming the bad field; the scaled arithmetic must stay within exact integers. */
export function assertValidLimitParams(params: LimitParams): void {
  if (!Number.isSafeInteger(params.limit) || params.limit < 1) {
    throw new RangeError(`limit must be a positive integer, got ${params.limit}`);
  }
  if (!Number.isSafeInteger(params.windowMs) || params.windowMs < 1) {
    throw new RangeError(`windowMs must be a positive integer, got ${params.windowMs}`);
  }
  if (params.burst !== undefined && (!Number.isSafeInteger(params.burst) || params.burst < 1)) {
    throw new RangeError(`burst must be a positive integer, got ${params.burst}`);
  }
  // Sliding window and the buckets count in units × windowMs; keep that below 2^53 with room to add.
  const largest = Math.max(params.limit, params.burst ?? 0);
  if (largest * params.windowMs > Number.MAX_SAFE_INTEGER / 4) {
    throw new RangeError(`limit (or burst) × windowMs must stay below 2^51 for exact arithmetic, got ${largest} × ${params.windowMs}`);
  }
}

/** The bucket size: `burst`, or `limit` when no burst is given. */
export function burstOf(params: LimitParams): number {
  return params.burst ?? params.limit;
}

/** For parseState: a whole number a store could have written. */
export function isWholeNumber(value: unknown, min = 0): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

/** "minute", "24 hours", "1.5 seconds": the span a window covers, for describe(). */
export function spanWords(ms: number): string {
  const units: readonly [number, string][] = [
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [size, word] of units) {
    if (ms % size === 0) {
      const n = ms / size;
      return n === 1 ? word : `${n} ${word}s`;
    }
  }
  const seconds = ms / 1000;
  return `${Number(seconds.toFixed(3))} seconds`;
}

/** "0.5 s", "8.571 s", "0.002 s": one emission interval, for describe(). */
export function intervalWords(ms: number): string {
  const seconds = Number((ms / 1000).toFixed(3));
  return seconds > 0 ? `${seconds} s` : `${Number(ms.toFixed(6))} ms`;
}

/** What `decide` answers for a cost above `maxCost`: refused, nothing written, a retry hint of at least 1 ms. */
export function unfitRetryAfterMs(resetAtMs: number, nowMs: number): number {
  return Math.max(1, resetAtMs - nowMs);
}

/** Checks an adjustment from outside the pure core (null: none); a bad one must never reach a store. */
export function assertValidAdjustment(adjustment: Adjustment<unknown> | null): void {
  if (adjustment === null) return;
  if (!Number.isSafeInteger(adjustment.deltaUnits)) {
    throw new RangeError(`adjustment deltaUnits must be an integer, got ${adjustment.deltaUnits}`);
  }
}
