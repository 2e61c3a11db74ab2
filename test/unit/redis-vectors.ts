import type { FixedWindowState, WindowAdjustment } from '../../src/library/window/fixed-window';
import type { WindowDecision } from '../../src/library/window/decision';

/**
 * The table that holds the fixed-window decision and its Lua twin together:
 * test/integration/redis-lua-twin.test.ts runs every row through
 * decideFixedWindow and through the script on a real redis-server.
 * Data only. Expected values are written out by hand, not computed.
 */
export interface FixedWindowVector {
  readonly name: string;
  readonly state: FixedWindowState | null;
  readonly nowMs: number;
  readonly policy: { readonly limit: number; readonly windowMs: number };
  readonly cost: number;
  readonly expected: WindowDecision;
  /** The state written afterwards; null = nothing written (the stored state is left as it was). */
  readonly next: FixedWindowState | null;
}

const EPOCH_MS = 1_700_000_000_123; // 2023-11-14, window 28333333 of a minute, 1699999999 of a second
const MINUTE = { limit: 120, windowMs: 60_000 } as const;
const W = 28_333_333; // floor(EPOCH_MS / 60000)
const RESET = (W + 1) * 60_000; // 1700000040000

export const FIXED_WINDOW_VECTORS: readonly FixedWindowVector[] = [
  {
    name: 'first hit on an empty key',
    state: null,
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: true, limit: 120, remaining: 119, resetAtMs: RESET, retryAfterMs: 0 },
    next: { windowNumber: W, count: 1 },
  },
  {
    name: 'same window, under the limit',
    state: { windowNumber: W, count: 50 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: true, limit: 120, remaining: 69, resetAtMs: RESET, retryAfterMs: 0 },
    next: { windowNumber: W, count: 51 },
  },
  {
    name: 'the last unit of the window',
    state: { windowNumber: W, count: 119 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: true, limit: 120, remaining: 0, resetAtMs: RESET, retryAfterMs: 0 },
    next: { windowNumber: W, count: 120 },
  },
  {
    name: 'full window refuses and writes nothing',
    state: { windowNumber: W, count: 120 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: false, limit: 120, remaining: 0, resetAtMs: RESET, retryAfterMs: 39_877 },
    next: null,
  },
  {
    name: 'a cost that does not fit is refused whole, remaining unchanged',
    state: { windowNumber: W, count: 118 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 5,
    expected: { allowed: false, limit: 120, remaining: 2, resetAtMs: RESET, retryAfterMs: 39_877 },
    next: null,
  },
  {
    name: 'a multi-unit cost that fits exactly',
    state: { windowNumber: W, count: 115 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 5,
    expected: { allowed: true, limit: 120, remaining: 0, resetAtMs: RESET, retryAfterMs: 0 },
    next: { windowNumber: W, count: 120 },
  },
  {
    name: 'cost above the limit on an empty key',
    state: null,
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 121,
    expected: { allowed: false, limit: 120, remaining: 120, resetAtMs: RESET, retryAfterMs: 39_877 },
    next: null,
  },
  {
    name: 'first hit of a new window replaces a full old one',
    state: { windowNumber: W - 1, count: 120 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: true, limit: 120, remaining: 119, resetAtMs: RESET, retryAfterMs: 0 },
    next: { windowNumber: W, count: 1 },
  },
  {
    name: 'a much older window is ignored too',
    state: { windowNumber: W - 1000, count: 7 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 3,
    expected: { allowed: true, limit: 120, remaining: 117, resetAtMs: RESET, retryAfterMs: 0 },
    next: { windowNumber: W, count: 3 },
  },
  {
    name: 'stored window newer than our clock: count against it',
    state: { windowNumber: W + 1, count: 10 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: true, limit: 120, remaining: 109, resetAtMs: RESET + 60_000, retryAfterMs: 0 },
    next: { windowNumber: W + 1, count: 11 },
  },
  {
    name: 'stored window newer and full: refused until its end, not ours',
    state: { windowNumber: W + 1, count: 120 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: false, limit: 120, remaining: 0, resetAtMs: RESET + 60_000, retryAfterMs: 99_877 },
    next: null,
  },
  {
    name: 'cost 0 on an empty key reads without writing',
    state: null,
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 0,
    expected: { allowed: true, limit: 120, remaining: 120, resetAtMs: RESET, retryAfterMs: 0 },
    next: null,
  },
  {
    name: 'cost 0 on a full window is allowed and writes nothing',
    state: { windowNumber: W, count: 120 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 0,
    expected: { allowed: true, limit: 120, remaining: 0, resetAtMs: RESET, retryAfterMs: 0 },
    next: null,
  },
  {
    name: 'cost 0 on an old window reports a fresh budget and leaves the old state',
    state: { windowNumber: W - 1, count: 90 },
    nowMs: EPOCH_MS,
    policy: MINUTE,
    cost: 0,
    expected: { allowed: true, limit: 120, remaining: 120, resetAtMs: RESET, retryAfterMs: 0 },
    next: null,
  },
  {
    name: 'exactly on a boundary belongs to the new window',
    state: { windowNumber: W, count: 120 },
    nowMs: RESET,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: true, limit: 120, remaining: 119, resetAtMs: RESET + 60_000, retryAfterMs: 0 },
    next: { windowNumber: W + 1, count: 1 },
  },
  {
    name: 'one ms before a boundary is the old window, retry in 1 ms',
    state: { windowNumber: W, count: 120 },
    nowMs: RESET - 1,
    policy: MINUTE,
    cost: 1,
    expected: { allowed: false, limit: 120, remaining: 0, resetAtMs: RESET, retryAfterMs: 1 },
    next: null,
  },
  {
    name: 'time zero',
    state: null,
    nowMs: 0,
    policy: { limit: 3, windowMs: 1000 },
    cost: 1,
    expected: { allowed: true, limit: 3, remaining: 2, resetAtMs: 1000, retryAfterMs: 0 },
    next: { windowNumber: 0, count: 1 },
  },
  {
    name: 'one-second windows: window numbers above 2^31',
    state: { windowNumber: 1_699_999_999, count: 4 },
    nowMs: EPOCH_MS - 1000,
    policy: { limit: 5, windowMs: 1000 },
    cost: 1,
    expected: { allowed: true, limit: 5, remaining: 0, resetAtMs: 1_700_000_000_000, retryAfterMs: 0 },
    next: { windowNumber: 1_699_999_999, count: 5 },
  },
  {
    name: 'a window length that does not divide the epoch',
    state: { windowNumber: 242_857_142, count: 2 },
    nowMs: EPOCH_MS,
    policy: { limit: 3, windowMs: 7000 },
    cost: 1,
    expected: { allowed: true, limit: 3, remaining: 0, resetAtMs: 1_700_000_001_000, retryAfterMs: 0 },
    next: { windowNumber: 242_857_142, count: 3 },
  },
  {
    name: 'a limit at Number.MAX_SAFE_INTEGER survives the Lua double and the stored string',
    state: { windowNumber: W, count: 9_007_199_254_740_990 },
    nowMs: EPOCH_MS,
    policy: { limit: 9_007_199_254_740_991, windowMs: 60_000 },
    cost: 1,
    expected: { allowed: true, limit: 9_007_199_254_740_991, remaining: 0, resetAtMs: RESET, retryAfterMs: 0 },
    next: { windowNumber: W, count: 9_007_199_254_740_991 },
  },
  {
    name: 'a count above 10^14 is stored without rounding',
    state: { windowNumber: W, count: 123_456_789_012_345 },
    nowMs: EPOCH_MS,
    policy: { limit: 999_999_999_999_999, windowMs: 60_000 },
    cost: 2,
    expected: { allowed: true, limit: 999_999_999_999_999, remaining: 876_543_210_987_652, resetAtMs: RESET, retryAfterMs: 0 },
    next: { windowNumber: W, count: 123_456_789_012_347 },
  },
  {
    name: 'a long window (one day)',
    state: { windowNumber: 19_675, count: 999 },
    nowMs: EPOCH_MS,
    policy: { limit: 1000, windowMs: 86_400_000 },
    cost: 1,
    expected: { allowed: true, limit: 1000, remaining: 0, resetAtMs: 1_700_006_400_000, retryAfterMs: 0 },
    next: { windowNumber: 19_675, count: 1000 },
  },
];

/** The table for adjustFixedWindow and the adjust half of its Lua twin (stores/lua/fixed-window.ts). */
export interface AdjustVector {
  readonly name: string;
  readonly state: FixedWindowState | null;
  readonly nowMs: number;
  readonly windowMs: number;
  readonly adjustment: WindowAdjustment;
  /** The state written afterwards; null = nothing written. */
  readonly next: FixedWindowState | null;
}

export const ADJUST_VECTORS: readonly AdjustVector[] = [
  {
    name: 'a refund takes one unit off the window it was spent in',
    state: { windowNumber: W, count: 5 },
    nowMs: EPOCH_MS,
    windowMs: 60_000,
    adjustment: { windowNumber: W, atLeastCount: 0, deltaUnits: -1 },
    next: { windowNumber: W, count: 4 },
  },
  {
    name: 'a refund never takes the count below zero',
    state: { windowNumber: W, count: 0 },
    nowMs: EPOCH_MS,
    windowMs: 60_000,
    adjustment: { windowNumber: W, atLeastCount: 0, deltaUnits: -3 },
    next: null,
  },
  {
    name: 'a refund for a window that has passed writes nothing',
    state: { windowNumber: W + 1, count: 2 },
    nowMs: EPOCH_MS + 60_000,
    windowMs: 60_000,
    adjustment: { windowNumber: W, atLeastCount: 0, deltaUnits: -1 },
    next: null,
  },
  {
    name: 'reconciliation adds locally granted units to the stored count',
    state: { windowNumber: W, count: 7 },
    nowMs: EPOCH_MS,
    windowMs: 60_000,
    adjustment: { windowNumber: W, atLeastCount: 4, deltaUnits: 6 },
    next: { windowNumber: W, count: 13 },
  },
  {
    name: 'reconciliation into a store that restarted empty starts from the count the instance knew',
    state: null,
    nowMs: EPOCH_MS,
    windowMs: 60_000,
    adjustment: { windowNumber: W, atLeastCount: 4, deltaUnits: 6 },
    next: { windowNumber: W, count: 10 },
  },
  {
    name: 'an older stored window counts as empty',
    state: { windowNumber: W - 1, count: 90 },
    nowMs: EPOCH_MS,
    windowMs: 60_000,
    adjustment: { windowNumber: W, atLeastCount: 0, deltaUnits: 2 },
    next: { windowNumber: W, count: 2 },
  },
  {
    name: 'a caller whose clock is behind adjusts the newer stored window it belongs to',
    state: { windowNumber: W + 1, count: 3 },
    nowMs: EPOCH_MS,
    windowMs: 60_000,
    adjustment: { windowNumber: W + 1, atLeastCount: 0, deltaUnits: 1 },
    next: { windowNumber: W + 1, count: 4 },
  },
  {
    name: 'an adjustment that changes nothing writes nothing',
    state: { windowNumber: W, count: 5 },
    nowMs: EPOCH_MS,
    windowMs: 60_000,
    adjustment: { windowNumber: W, atLeastCount: 5, deltaUnits: 0 },
    next: null,
  },
];
