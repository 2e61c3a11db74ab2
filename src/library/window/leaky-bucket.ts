import { burstOf, intervalWords, isWholeNumber, unfitRetryAfterMs, type Adjustment, type Algorithm, type AlgorithmResult, type LimitParams } from './algorithm';

/**
 * Leaky bucket as a meter: GCRA (virtual scheduling). Each unit is due one
 * emission interval T = windowMs / limit after the previous one; the
 * theoretical arrival time (TAT) is when the key would be idle again. A call of
 * `cost` moves TAT to max(TAT, now) + cost × T and is allowed while that is
 * within burst × T of now (burst tolerance tau = (burst − 1) × T; burst
 * defaults to `limit`).
 *
 * Promise: in any interval of length t, at most burst + limit × t / windowMs
 * units pass, spaced on average T apart. Trade-off: one timestamp of state and
 * the smoothest output (burst 1 is "one call every T, no bursts"); behaves
 * like the token bucket with the same burst, stored as a time instead of a count.
 *
 * T is rarely a whole number of ms (60 000 / 7), so TAT is kept exactly as
 * tatMs + tatRemainder / limit ms with 0 ≤ tatRemainder < limit: one unit adds
 * windowMs to the remainder and carries whole ms, all on integers (no drift,
 * and the Lua twin agrees bit for bit). The stored state is therefore a pair,
 * not the single float TAT often is.
 *
 * A caller whose clock is behind sees TAT further ahead of it: it is answered
 * more strictly, never more generously.
 *
 * resetAtMs: when TAT has passed (a full burst is available again).
 */
export interface LeakyBucketState {
  /** Whole ms of the theoretical arrival time. */
  readonly tatMs: number;
  /** The rest of it, in 1/limit ms: 0 ≤ tatRemainder < limit once normalised. */
  readonly tatRemainder: number;
}

interface Tat {
  readonly ms: number;
  readonly rem: number;
}

/** tat + units × T, carried; `units` may be negative. */
function shift(tat: Tat, units: number, params: LimitParams): Tat {
  const rem = tat.rem + units * params.windowMs;
  const carry = Math.floor(rem / params.limit);
  return { ms: tat.ms + carry, rem: rem - carry * params.limit };
}

/** The stored TAT, normalised, or null's: idle at nowMs. */
function tatOf(state: LeakyBucketState | null, nowMs: number, params: LimitParams): Tat {
  return state === null ? { ms: nowMs, rem: 0 } : shift({ ms: state.tatMs, rem: state.tatRemainder }, 0, params);
}

function later(a: Tat, b: Tat): Tat {
  return a.ms > b.ms || (a.ms === b.ms && a.rem >= b.rem) ? a : b;
}

/** Whether tat − nowMs ≤ span (span in 1/limit ms), without multiplying big numbers. */
function withinSpan(tat: Tat, nowMs: number, span: number, limit: number): boolean {
  const spanMs = Math.floor(span / limit);
  const spanRem = span - spanMs * limit;
  const aheadMs = tat.ms - nowMs;
  return aheadMs < spanMs || (aheadMs === spanMs && tat.rem <= spanRem);
}

/** The first whole ms at or after tat. */
function ceilMs(tat: Tat): number {
  return tat.rem > 0 ? tat.ms + 1 : tat.ms;
}

function decide(state: LeakyBucketState | null, nowMs: number, params: LimitParams, cost: number): AlgorithmResult<LeakyBucketState> {
  const { limit, windowMs } = params;
  const burst = burstOf(params);
  const base = later(tatOf(state, nowMs, params), { ms: nowMs, rem: 0 });
  const moved = shift(base, cost, params);
  const allowed = cost === 0 || (cost <= burst && withinSpan(moved, nowMs, burst * windowMs, limit));
  const after = allowed ? moved : base;
  const resetAtMs = ceilMs(after);

  // Units that still fit after this call: the largest k with after + k·T − now ≤ burst·T.
  let remaining = 0;
  if (withinSpan(after, nowMs, burst * windowMs, limit)) {
    const aheadScaled = (after.ms - nowMs) * limit + after.rem;
    remaining = Math.floor((burst * windowMs - aheadScaled) / windowMs);
  }

  let retryAfterMs = 0;
  if (!allowed && cost > burst) retryAfterMs = unfitRetryAfterMs(resetAtMs, nowMs);
  else if (!allowed) {
    // A fitting cost is refused only while TAT is ahead: it fits from TAT − (burst − cost)·T on.
    retryAfterMs = ceilMs(shift(base, cost - burst, params)) - nowMs;
  }
  return {
    decision: { allowed, limit: burst, remaining, resetAtMs, retryAfterMs },
    next: allowed && cost > 0 ? { tatMs: after.ms, tatRemainder: after.rem } : null,
  };
}

function adjust(state: LeakyBucketState | null, nowMs: number, params: LimitParams, adjustment: Adjustment<LeakyBucketState>): LeakyBucketState | null {
  const { atLeast, deltaUnits } = adjustment;
  const idle: Tat = { ms: nowMs, rem: 0 };
  const own = later(tatOf(state, nowMs, params), idle);
  // The more spent is the later TAT; a refund never moves it before now (idle).
  const merged = later(own, tatOf(atLeast, nowMs, params));
  const result = later(shift(merged, deltaUnits, params), idle);
  if (result.ms === own.ms && result.rem === own.rem) return null;
  return { tatMs: result.ms, tatRemainder: result.rem };
}

export const leakyBucket: Algorithm<LeakyBucketState> = {
  name: 'leaky-bucket',
  decide,
  adjust,
  expiresAtMs: (state, params) => ceilMs(tatOf(state, 0, params)),
  maxCost: (params) => burstOf(params),
  describe: (params) => {
    const burst = burstOf(params);
    const every = `one call every ${intervalWords(params.windowMs / params.limit)}`;
    return burst === 1 ? `${every}, no bursts` : `${every}, with bursts of up to ${burst}`;
  },
  parseState(value) {
    if (typeof value !== 'object' || value === null) return null;
    const { tatMs, tatRemainder } = value as Record<string, unknown>;
    return isWholeNumber(tatMs) && isWholeNumber(tatRemainder) ? { tatMs, tatRemainder } : null;
  },
};
