import { isWholeNumber, spanWords, unfitRetryAfterMs, type Adjustment, type Algorithm, type AlgorithmResult, type LimitParams } from './algorithm';

/**
 * Sliding window, the two-window weighted counter (Cloudflare's): the count of
 * the previous clock window is assumed spread evenly over it, so
 *   estimate = previousCount × (1 − elapsed / windowMs) + count
 * and a call is allowed while estimate + cost ≤ limit.
 *
 * Promise: at most `limit` units in every clock window, and fewer than
 * 2·limit (at most limit + previousCount × elapsed / windowMs, so at most
 * 2·limit − 1) in any interval of windowMs. Trade-off: three integers of state
 * and no boundary burst of 2·limit as with the fixed window when traffic is
 * steady, but not exact: the error is the previous window's traffic that was
 * not spread evenly (see docs/algorithms.md).
 *
 * The comparison is made × windowMs (previousCount × (windowMs − elapsed) +
 * (count + cost) × windowMs ≤ limit × windowMs), on integers, with no rounding.
 *
 * resetAtMs: when the estimate is back to 0 (the end of the next window if
 * this window has spent anything, else the end of this one).
 */
export interface SlidingWindowState {
  readonly windowNumber: number;
  /** Units spent in window `windowNumber`. */
  readonly count: number;
  /** Units spent in window `windowNumber − 1`. */
  readonly previousCount: number;
}

/** The state seen from window n (n ≥ state.windowNumber): what rolled out is gone. */
function rolled(state: SlidingWindowState | null, n: number): { count: number; previousCount: number } {
  if (state === null) return { count: 0, previousCount: 0 };
  if (state.windowNumber === n) return { count: state.count, previousCount: state.previousCount };
  if (state.windowNumber === n - 1) return { count: 0, previousCount: state.count };
  return { count: 0, previousCount: 0 };
}

/** Units that still fit at `elapsed` ms into a window, given what is spent; may be negative. */
function room(limit: number, windowMs: number, count: number, previousCount: number, elapsed: number): number {
  return Math.floor((limit * windowMs - previousCount * (windowMs - elapsed) - count * windowMs) / windowMs);
}

/**
 * The earliest epoch ms at or after window n's start + `elapsed` when `cost`
 * fits, with nothing else happening. Caller guarantees cost ≤ limit.
 */
function earliestFit(n: number, elapsed: number, count: number, previousCount: number, limit: number, windowMs: number, cost: number): number {
  // This window: previousCount × (W − x) ≤ (limit − count − cost) × W.
  const slack = limit - count - cost;
  if (slack >= 0) {
    if (previousCount === 0) return n * windowMs + elapsed;
    const x = Math.max(elapsed, windowMs - Math.floor((slack * windowMs) / previousCount));
    if (x < windowMs) return n * windowMs + x;
  }
  // The next window: count becomes the previous count, the current one starts at 0.
  if (count === 0) return (n + 1) * windowMs;
  const y = Math.max(0, windowMs - Math.floor(((limit - cost) * windowMs) / count));
  if (y < windowMs) return (n + 1) * windowMs + y;
  // The one after: nothing left of either.
  return (n + 2) * windowMs;
}

function resetAt(n: number, count: number, previousCount: number, effectiveNowMs: number, windowMs: number): number {
  if (count > 0) return (n + 2) * windowMs;
  if (previousCount > 0) return (n + 1) * windowMs;
  return effectiveNowMs;
}

function decide(state: SlidingWindowState | null, nowMs: number, params: LimitParams, cost: number): AlgorithmResult<SlidingWindowState> {
  const { limit, windowMs } = params;
  const n = Math.max(Math.floor(nowMs / windowMs), state?.windowNumber ?? 0);
  const effectiveNowMs = Math.max(nowMs, n * windowMs);
  const elapsed = effectiveNowMs - n * windowMs;
  const { count, previousCount } = rolled(state, n);

  const allowed = cost === 0 || (cost <= limit && room(limit, windowMs, count, previousCount, elapsed) >= cost);
  const spent = allowed ? count + cost : count;
  const resetAtMs = resetAt(n, spent, previousCount, effectiveNowMs, windowMs);
  let retryAfterMs = 0;
  if (!allowed) {
    retryAfterMs =
      cost > limit
        ? unfitRetryAfterMs(resetAtMs, nowMs)
        : earliestFit(n, elapsed, count, previousCount, limit, windowMs, cost) - nowMs;
  }
  return {
    decision: {
      allowed,
      limit,
      remaining: Math.max(0, room(limit, windowMs, spent, previousCount, elapsed)),
      resetAtMs,
      retryAfterMs,
    },
    next: allowed && cost > 0 ? { windowNumber: n, count: spent, previousCount } : null,
  };
}

function adjust(state: SlidingWindowState | null, nowMs: number, params: LimitParams, adjustment: Adjustment<SlidingWindowState>): SlidingWindowState | null {
  const { atLeast, deltaUnits } = adjustment;
  const n = Math.max(Math.floor(nowMs / params.windowMs), state?.windowNumber ?? 0, atLeast?.windowNumber ?? 0);
  const own = rolled(state, n);
  const known = rolled(atLeast, n);
  // More spent of the two, component by component. Spending goes into this window; a
  // refund comes off this window first, then off the previous one.
  const mergedCount = Math.max(own.count, known.count) + deltaUnits;
  const count = Math.max(0, mergedCount);
  const previousCount = Math.max(0, Math.max(own.previousCount, known.previousCount) + Math.min(0, mergedCount));
  if (count === own.count && previousCount === own.previousCount) return null;
  return { windowNumber: n, count, previousCount };
}

export const slidingWindow: Algorithm<SlidingWindowState> = {
  name: 'sliding-window',
  decide,
  adjust,
  // Once the next window starts, only `count` is left; once the one after starts, nothing.
  expiresAtMs: (state, params) => (state.windowNumber + (state.count > 0 ? 2 : 1)) * params.windowMs,
  maxCost: (params) => params.limit,
  describe: (params) => `about ${params.limit} in any ${spanWords(params.windowMs)} (a weighted estimate; at most ${params.limit} in each clock ${spanWords(params.windowMs)})`,
  parseState(value) {
    if (typeof value !== 'object' || value === null) return null;
    const { windowNumber, count, previousCount } = value as Record<string, unknown>;
    return isWholeNumber(windowNumber) && isWholeNumber(count) && isWholeNumber(previousCount) ? { windowNumber, count, previousCount } : null;
  },
};
