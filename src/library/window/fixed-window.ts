import type { WindowDecision } from './decision';
import type { RateLimitPolicy } from './policy';
import { isWholeNumber, spanWords, type Algorithm } from './algorithm';

/**
 * The stored state of one key: the number of the window it counts and the
 * cost spent in it. windowNumber = floor(nowMs / windowMs), so every instance
 * agrees on window boundaries without talking to each other.
 */
export interface FixedWindowState {
  readonly windowNumber: number;
  readonly count: number;
}

export interface FixedWindowResult {
  readonly decision: WindowDecision;
  /**
   * The state to store, or null when nothing needs writing (a refusal or a
   * cost-0 read), so stores can abort their transaction instead of writing.
   */
  readonly next: FixedWindowState | null;
}

export function windowNumberAt(nowMs: number, windowMs: number): number {
  return Math.floor(nowMs / windowMs);
}

/**
 * One fixed-window decision worked out into plain fields, by `decide`, the
 * only copy of the fixed-window arithmetic. A caller keeps one and reuses
 * it: the memory store's hot path copies its fields into its own record and
 * the limiter's Decision instead of allocating the three objects of a
 * FixedWindowResult on every call (issue 22). A method, not a function: the
 * store calls it on the instance it holds, where under tsx each read of an
 * imported function is a getter call. decideFixedWindow documents the rules.
 */
export class FixedWindowStep {
  allowed = false;
  limit = 0;
  remaining = 0;
  resetAtMs = 0;
  retryAfterMs = 0;
  /** The window the call counted against and its count after the call. */
  windowNumber = 0;
  count = 0;
  /** Whether `windowNumber` and `count` must be stored: an allowed call of positive cost. */
  changed = false;

  /**
   * Decides a call of `cost` against the held state (`heldWindow`,
   * `heldCount`; NO_WINDOW and 0 when empty) into this object, which it
   * returns. Allocates nothing; no clock, no I/O.
   */
  decide(heldWindow: number, heldCount: number, nowMs: number, limit: number, windowMs: number, cost: number): this {
    const ownWindow = windowNumberAt(nowMs, windowMs);
    const windowNumber = heldWindow > ownWindow ? heldWindow : ownWindow;
    const spent = heldWindow === windowNumber ? heldCount : 0;
    const resetAtMs = (windowNumber + 1) * windowMs;
    const allowed = spent + cost <= limit;
    const count = allowed ? spent + cost : spent;
    this.allowed = allowed;
    this.limit = limit;
    this.remaining = Math.max(0, limit - count);
    this.resetAtMs = resetAtMs;
    this.retryAfterMs = allowed ? 0 : resetAtMs - nowMs;
    this.windowNumber = windowNumber;
    this.count = count;
    this.changed = allowed && cost > 0;
    return this;
  }
}

/** As the held window number of an empty state: below every window, so it is never the one counted. */
export const NO_WINDOW = Number.NEGATIVE_INFINITY;

// decideFixedWindow's own: it copies the fields out before returning, and nothing runs in between.
const scratch = new FixedWindowStep();

/**
 * The fixed-window decision, pure: no clock, no I/O. Stores run it inside
 * their atomic primitive (RTDB transaction, Redis Lua, a Map).
 *
 * Refused calls do not count, so a client that keeps retrying during a refusal
 * does not push its own reset further away.
 *
 * A caller whose clock is behind the one that last wrote (stored window newer
 * than its own) counts against the stored window instead of opening an older
 * one: a lagging clock must never mint a fresh budget.
 *
 * `cost` 0 reads the window without spending anything (a status query).
 */
export function decideFixedWindow(
  state: FixedWindowState | null,
  nowMs: number,
  policy: Pick<RateLimitPolicy, 'limit' | 'windowMs'>,
  cost: number,
): FixedWindowResult {
  const { allowed, limit, remaining, resetAtMs, retryAfterMs, changed, windowNumber, count } = scratch.decide(
    state === null ? NO_WINDOW : state.windowNumber,
    state === null ? 0 : state.count,
    nowMs,
    policy.limit,
    policy.windowMs,
    cost,
  );
  return { decision: { allowed, limit, remaining, resetAtMs, retryAfterMs }, next: changed ? { windowNumber, count } : null };
}

/**
 * A correction to one window's count, applied after the fact: a refund (a
 * failed sign-in reserved before the secret was checked, then found valid) or
 * a reconciliation (calls this instance granted from its local window while
 * the shared store was down, written back when it returns).
 */
export interface WindowAdjustment {
  /** The window the correction belongs to; once it has passed, the correction is dropped. */
  readonly windowNumber: number;
  /**
   * The count is first raised to at least this: what this instance last knew
   * the shared window had spent, so a store that restarted empty relearns it.
   */
  readonly atLeastCount: number;
  /** Then this many units are added; negative refunds. The count never goes below 0. */
  readonly deltaUnits: number;
}

/**
 * The state to store after an adjustment, or null when nothing changes (the
 * window has passed, or the adjustment nets to nothing). Pure, like the
 * decision, so every store runs the same arithmetic atomically.
 */
export function adjustFixedWindow(
  state: FixedWindowState | null,
  nowMs: number,
  policy: Pick<RateLimitPolicy, 'windowMs'>,
  adjustment: WindowAdjustment,
): FixedWindowState | null {
  const ownWindow = windowNumberAt(nowMs, policy.windowMs);
  const windowNumber = state !== null && state.windowNumber > ownWindow ? state.windowNumber : ownWindow;
  if (adjustment.windowNumber !== windowNumber) return null;
  const spent = state !== null && state.windowNumber === windowNumber ? state.count : 0;
  const count = Math.max(0, Math.max(spent, adjustment.atLeastCount) + adjustment.deltaUnits);
  return count === spent ? null : { windowNumber, count };
}

/** Checks an adjustment from outside the pure core; a bad one must never reach a store. */
export function assertValidAdjustment(adjustment: WindowAdjustment): void {
  if (!Number.isSafeInteger(adjustment.windowNumber) || adjustment.windowNumber < 0) {
    throw new RangeError(`adjustment windowNumber must be a non-negative integer, got ${adjustment.windowNumber}`);
  }
  if (!Number.isSafeInteger(adjustment.atLeastCount) || adjustment.atLeastCount < 0) {
    throw new RangeError(`adjustment atLeastCount must be a non-negative integer, got ${adjustment.atLeastCount}`);
  }
  if (!Number.isSafeInteger(adjustment.deltaUnits)) {
    throw new RangeError(`adjustment deltaUnits must be an integer, got ${adjustment.deltaUnits}`);
  }
}

/**
 * The fixed window as an `Algorithm` value. Promise: at most `limit` units in
 * each window [n·windowMs, (n+1)·windowMs) of the epoch. Trade-off: the
 * cheapest state (two integers) and boundaries every instance agrees on, but up
 * to 2·limit can pass in one windowMs that straddles a boundary.
 * resetAtMs is the end of the window.
 */
export const fixedWindow: Algorithm<FixedWindowState> = {
  name: 'fixed-window',
  decide(state, nowMs, params, cost) {
    const result = decideFixedWindow(state, nowMs, params, cost);
    // A cost-0 read is always allowed, even of a window an adjustment pushed past its limit;
    // decideFixedWindow on its own refuses that read. stores/lua/fixed-window.ts follows this value.
    if (cost === 0 && !result.decision.allowed) return { decision: { ...result.decision, allowed: true, retryAfterMs: 0 }, next: null };
    return result;
  },
  adjust(state, nowMs, params, { atLeast, deltaUnits }) {
    // The window of record is the newest of ours, the stored one and the one atLeast saw:
    // a later window seen elsewhere is the truth, not an older one by our clock.
    const windowNumber = Math.max(
      windowNumberAt(nowMs, params.windowMs),
      state?.windowNumber ?? 0,
      atLeast?.windowNumber ?? 0,
    );
    const atLeastCount = atLeast !== null && atLeast.windowNumber === windowNumber ? atLeast.count : 0;
    const effectiveNowMs = Math.max(nowMs, windowNumber * params.windowMs);
    return adjustFixedWindow(state, effectiveNowMs, params, { windowNumber, atLeastCount, deltaUnits });
  },
  expiresAtMs: (state, params) => (state.windowNumber + 1) * params.windowMs,
  maxCost: (params) => params.limit,
  describe: (params) => `at most ${params.limit} in each ${spanWords(params.windowMs)} window (windows start on the clock)`,
  parseState(value) {
    if (typeof value !== 'object' || value === null) return null;
    const { windowNumber, count } = value as Record<string, unknown>;
    return isWholeNumber(windowNumber) && isWholeNumber(count) ? { windowNumber, count } : null;
  },
};
