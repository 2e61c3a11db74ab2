import type { Adjustment, AlgorithmName, AlgorithmStates, LimitParams } from '../../src/library/window/algorithms';
import type { WindowDecision } from '../../src/library/window/decision';

/**
 * The table that holds every algorithm (src/library/window/) and its Lua
 * twin (src/library/backends/redis/lua/) together: test/unit/algorithms/*.test.ts run
 * each row through the TypeScript value, test/integration/algorithm-lua-twins.test.ts
 * through both it and the script on a real redis-server.
 * Data only. Expected values are worked out by hand (the arithmetic is in the
 * comments), not computed.
 */
export interface DecideVector<S> {
  readonly name: string;
  readonly state: S | null;
  readonly nowMs: number;
  readonly params: LimitParams;
  readonly cost: number;
  readonly expected: WindowDecision;
  /** The state written afterwards; null = nothing written. */
  readonly next: S | null;
}

export interface AdjustVector<S> {
  readonly name: string;
  readonly state: S | null;
  readonly nowMs: number;
  readonly params: LimitParams;
  readonly adjustment: Adjustment<S>;
  /** The state written afterwards; null = nothing written. */
  readonly next: S | null;
}

export interface AlgorithmVectors<S> {
  readonly decide: readonly DecideVector<S>[];
  readonly adjust: readonly AdjustVector<S>[];
}

const EPOCH_MS = 1_700_000_000_123; // minute window 28_333_333, 20_123 ms in
const W = 28_333_333;
const RESET = 1_700_000_040_000; // (W + 1) × 60_000
const MINUTE = { limit: 120, windowMs: 60_000 } as const;

const FIXED_WINDOW: AlgorithmVectors<AlgorithmStates['fixed-window']> = {
  decide: [
    {
      name: 'first hit on an empty key',
      state: null, nowMs: EPOCH_MS, params: MINUTE, cost: 1,
      expected: { allowed: true, limit: 120, remaining: 119, resetAtMs: RESET, retryAfterMs: 0 },
      next: { windowNumber: W, count: 1 },
    },
    {
      name: 'a full window refuses until its end',
      state: { windowNumber: W, count: 120 }, nowMs: EPOCH_MS, params: MINUTE, cost: 1,
      expected: { allowed: false, limit: 120, remaining: 0, resetAtMs: RESET, retryAfterMs: 39_877 },
      next: null,
    },
    {
      name: 'cost 0 on a window an adjustment pushed past the limit is still a read, allowed',
      state: { windowNumber: W, count: 125 }, nowMs: EPOCH_MS, params: MINUTE, cost: 0,
      expected: { allowed: true, limit: 120, remaining: 0, resetAtMs: RESET, retryAfterMs: 0 },
      next: null,
    },
    {
      name: 'a cost above the limit is refused, remaining untouched',
      state: null, nowMs: EPOCH_MS, params: MINUTE, cost: 121,
      expected: { allowed: false, limit: 120, remaining: 120, resetAtMs: RESET, retryAfterMs: 39_877 },
      next: null,
    },
    {
      name: 'a clock behind the stored window counts against the stored window',
      state: { windowNumber: W + 1, count: 10 }, nowMs: EPOCH_MS, params: MINUTE, cost: 1,
      expected: { allowed: true, limit: 120, remaining: 109, resetAtMs: RESET + 60_000, retryAfterMs: 0 },
      next: { windowNumber: W + 1, count: 11 },
    },
  ],
  adjust: [
    {
      name: 'a refund takes a unit off the current window',
      state: { windowNumber: W, count: 5 }, nowMs: EPOCH_MS, params: MINUTE,
      adjustment: { atLeast: null, deltaUnits: -1 },
      next: { windowNumber: W, count: 4 },
    },
    {
      name: 'atLeast in a newer window is the truth: its count, then the delta',
      state: { windowNumber: W, count: 7 }, nowMs: EPOCH_MS, params: MINUTE,
      adjustment: { atLeast: { windowNumber: W + 1, count: 3 }, deltaUnits: 2 },
      next: { windowNumber: W + 1, count: 5 },
    },
    {
      name: 'atLeast more spent in the same window raises the count',
      state: { windowNumber: W, count: 2 }, nowMs: EPOCH_MS, params: MINUTE,
      adjustment: { atLeast: { windowNumber: W, count: 6 }, deltaUnits: 0 },
      next: { windowNumber: W, count: 6 },
    },
    {
      name: 'atLeast less spent and no delta changes nothing',
      state: { windowNumber: W, count: 5 }, nowMs: EPOCH_MS, params: MINUTE,
      adjustment: { atLeast: { windowNumber: W, count: 3 }, deltaUnits: 0 },
      next: null,
    },
    {
      name: 'atLeast from an older window is ignored',
      state: null, nowMs: EPOCH_MS, params: MINUTE,
      adjustment: { atLeast: { windowNumber: W - 1, count: 50 }, deltaUnits: 1 },
      next: { windowNumber: W, count: 1 },
    },
  ],
};

// limit 10 per 1000 ms; at 5250 the window is 5 and 250 ms have elapsed, so the
// previous window weighs 750/1000. Everything below is × 1000 (windowMs).
const TEN = { limit: 10, windowMs: 1000 } as const;

const SLIDING_WINDOW: AlgorithmVectors<AlgorithmStates['sliding-window']> = {
  decide: [
    {
      name: 'first hit on an empty key',
      // room = floor(10000 / 1000) = 10; after: floor(9000 / 1000) = 9; spent this window → reset at end of the next
      state: null, nowMs: 5250, params: TEN, cost: 1,
      expected: { allowed: true, limit: 10, remaining: 9, resetAtMs: 7000, retryAfterMs: 0 },
      next: { windowNumber: 5, count: 1, previousCount: 0 },
    },
    {
      name: 'the previous window rolls into previousCount and weighs 3/4',
      // room = floor((10000 − 8 × 750) / 1000) = 4; after: floor(3000 / 1000) = 3
      state: { windowNumber: 4, count: 8, previousCount: 0 }, nowMs: 5250, params: TEN, cost: 1,
      expected: { allowed: true, limit: 10, remaining: 3, resetAtMs: 7000, retryAfterMs: 0 },
      next: { windowNumber: 5, count: 1, previousCount: 8 },
    },
    {
      name: 'refused until enough of the previous window has faded',
      // room = floor((10000 − 6000 − 4000) / 1000) = 0; fits when 8 × (1000 − x) ≤ 5 × 1000: x = 1000 − floor(5000 / 8) = 375
      state: { windowNumber: 5, count: 4, previousCount: 8 }, nowMs: 5250, params: TEN, cost: 1,
      expected: { allowed: false, limit: 10, remaining: 0, resetAtMs: 7000, retryAfterMs: 125 },
      next: null,
    },
    {
      name: 'a full current window waits into the next one',
      // next window: 10 × (1000 − y) ≤ 9 × 1000: y = 1000 − floor(9000 / 10) = 100 → 6100
      state: { windowNumber: 5, count: 10, previousCount: 0 }, nowMs: 5250, params: TEN, cost: 1,
      expected: { allowed: false, limit: 10, remaining: 0, resetAtMs: 7000, retryAfterMs: 850 },
      next: null,
    },
    {
      name: 'a cost of the whole limit waits until both windows are empty',
      // next window: y = 1000 − floor(0 / 10) = 1000, not in it → 7000
      state: { windowNumber: 5, count: 10, previousCount: 0 }, nowMs: 5250, params: TEN, cost: 10,
      expected: { allowed: false, limit: 10, remaining: 0, resetAtMs: 7000, retryAfterMs: 1750 },
      next: null,
    },
    {
      name: 'a cost above the limit is refused with the 1 ms hint on an empty key',
      state: null, nowMs: 5250, params: TEN, cost: 11,
      expected: { allowed: false, limit: 10, remaining: 10, resetAtMs: 5250, retryAfterMs: 1 },
      next: null,
    },
    {
      name: 'a clock behind the stored window is answered at that window’s start',
      // window 6, elapsed 0: room = floor((10000 − 3000 − 2000) / 1000) = 5; after: floor(4000 / 1000) = 4
      state: { windowNumber: 6, count: 2, previousCount: 3 }, nowMs: 5250, params: TEN, cost: 1,
      expected: { allowed: true, limit: 10, remaining: 4, resetAtMs: 8000, retryAfterMs: 0 },
      next: { windowNumber: 6, count: 3, previousCount: 3 },
    },
    {
      name: 'cost 0 reads without writing',
      state: { windowNumber: 5, count: 4, previousCount: 8 }, nowMs: 5250, params: TEN, cost: 0,
      expected: { allowed: true, limit: 10, remaining: 0, resetAtMs: 7000, retryAfterMs: 0 },
      next: null,
    },
    {
      name: 'cost 0 on a window spent past a lowered limit is still allowed, and writes nothing',
      // room = floor((10000 − 12000) / 1000) = −2: nothing fits, but a free call needs no room
      state: { windowNumber: 5, count: 12, previousCount: 0 }, nowMs: 5250, params: TEN, cost: 0,
      expected: { allowed: true, limit: 10, remaining: 0, resetAtMs: 7000, retryAfterMs: 0 },
      next: null,
    },
    {
      name: 'refused on an empty current window: reset when the previous one has rolled out',
      // at 5050 the previous 10 weigh 950/1000: room = floor(500 / 1000) = 0; fits when 10 × (1000 − x) ≤ 9 × 1000: x = 100
      state: { windowNumber: 4, count: 10, previousCount: 0 }, nowMs: 5050, params: TEN, cost: 1,
      expected: { allowed: false, limit: 10, remaining: 0, resetAtMs: 6000, retryAfterMs: 50 },
      next: null,
    },
    {
      name: 'epoch-sized times and a minute window',
      // previous 120 weighs 39877/60000: room = floor((7200000 − 4785240) / 60000) = 40; after = floor(2354760 / 60000) = 39
      state: { windowNumber: W - 1, count: 120, previousCount: 0 }, nowMs: EPOCH_MS, params: MINUTE, cost: 1,
      expected: { allowed: true, limit: 120, remaining: 39, resetAtMs: 1_700_000_100_000, retryAfterMs: 0 },
      next: { windowNumber: W, count: 1, previousCount: 120 },
    },
  ],
  adjust: [
    {
      name: 'a refund comes off the current window',
      state: { windowNumber: 5, count: 3, previousCount: 8 }, nowMs: 5250, params: TEN,
      adjustment: { atLeast: null, deltaUnits: -1 },
      next: { windowNumber: 5, count: 2, previousCount: 8 },
    },
    {
      name: 'a refund larger than the current window spills into the previous one',
      state: { windowNumber: 5, count: 1, previousCount: 8 }, nowMs: 5250, params: TEN,
      adjustment: { atLeast: null, deltaUnits: -3 },
      next: { windowNumber: 5, count: 0, previousCount: 6 },
    },
    {
      name: 'atLeast in a newer window moves us there, component by component the larger',
      // ours rolled to window 6: (0, 4); theirs (1, 2)
      state: { windowNumber: 5, count: 4, previousCount: 0 }, nowMs: 5250, params: TEN,
      adjustment: { atLeast: { windowNumber: 6, count: 1, previousCount: 2 }, deltaUnits: 0 },
      next: { windowNumber: 6, count: 1, previousCount: 4 },
    },
    {
      name: 'atLeast less spent and no delta changes nothing',
      state: { windowNumber: 5, count: 3, previousCount: 8 }, nowMs: 5250, params: TEN,
      adjustment: { atLeast: { windowNumber: 5, count: 2, previousCount: 8 }, deltaUnits: 0 },
      next: null,
    },
    {
      name: 'units granted elsewhere, written into an empty key',
      state: null, nowMs: 5250, params: TEN,
      adjustment: { atLeast: null, deltaUnits: 2 },
      next: { windowNumber: 5, count: 2, previousCount: 0 },
    },
  ],
};

// limit 3 per 1000 ms: at 10000 an entry counts if its timestamp is after 9000.
const THREE = { limit: 3, windowMs: 1000 } as const;

const SLIDING_LOG: AlgorithmVectors<AlgorithmStates['sliding-log']> = {
  decide: [
    {
      name: 'first hit on an empty key',
      state: null, nowMs: 10_000, params: THREE, cost: 1,
      expected: { allowed: true, limit: 3, remaining: 2, resetAtMs: 11_000, retryAfterMs: 0 },
      next: { entries: [[10_000, 1]] },
    },
    {
      name: 'the last unit of the interval',
      state: { entries: [[9500, 1], [9800, 1]] }, nowMs: 10_000, params: THREE, cost: 1,
      expected: { allowed: true, limit: 3, remaining: 0, resetAtMs: 11_000, retryAfterMs: 0 },
      next: { entries: [[9500, 1], [9800, 1], [10_000, 1]] },
    },
    {
      name: 'refused until the oldest entry leaves',
      state: { entries: [[9500, 1], [9800, 2]] }, nowMs: 10_000, params: THREE, cost: 1,
      expected: { allowed: false, limit: 3, remaining: 0, resetAtMs: 10_800, retryAfterMs: 500 },
      next: null,
    },
    {
      name: 'a cost of 2 waits for enough entries to leave',
      state: { entries: [[9500, 1], [9800, 2]] }, nowMs: 10_000, params: THREE, cost: 2,
      expected: { allowed: false, limit: 3, remaining: 0, resetAtMs: 10_800, retryAfterMs: 800 },
      next: null,
    },
    {
      name: 'entries at or before now − windowMs are pruned from what is written',
      state: { entries: [[8000, 2], [9000, 1], [9500, 1]] }, nowMs: 10_000, params: THREE, cost: 1,
      expected: { allowed: true, limit: 3, remaining: 1, resetAtMs: 11_000, retryAfterMs: 0 },
      next: { entries: [[9500, 1], [10_000, 1]] },
    },
    {
      name: 'units spent in the same ms share one entry',
      state: { entries: [[10_000, 1]] }, nowMs: 10_000, params: THREE, cost: 2,
      expected: { allowed: true, limit: 3, remaining: 0, resetAtMs: 11_000, retryAfterMs: 0 },
      next: { entries: [[10_000, 3]] },
    },
    {
      name: 'a clock behind the newest entry is answered, and recorded, at that entry',
      state: { entries: [[10_500, 1]] }, nowMs: 10_000, params: THREE, cost: 1,
      expected: { allowed: true, limit: 3, remaining: 1, resetAtMs: 11_500, retryAfterMs: 0 },
      next: { entries: [[10_500, 2]] },
    },
    {
      name: 'a cost above the limit is refused with a hint to when the log is empty',
      state: { entries: [[9500, 1]] }, nowMs: 10_000, params: THREE, cost: 4,
      expected: { allowed: false, limit: 3, remaining: 2, resetAtMs: 10_500, retryAfterMs: 500 },
      next: null,
    },
    {
      name: 'cost 0 on a full log reads without writing',
      state: { entries: [[9500, 3]] }, nowMs: 10_000, params: THREE, cost: 0,
      expected: { allowed: true, limit: 3, remaining: 0, resetAtMs: 10_500, retryAfterMs: 0 },
      next: null,
    },
  ],
  adjust: [
    {
      name: 'a refund comes off the newest entry',
      state: { entries: [[9500, 1], [9800, 2]] }, nowMs: 10_000, params: THREE,
      adjustment: { atLeast: null, deltaUnits: -1 },
      next: { entries: [[9500, 1], [9800, 1]] },
    },
    {
      name: 'a refund larger than the newest entry continues into the one before',
      state: { entries: [[9500, 2], [9800, 1]] }, nowMs: 10_000, params: THREE,
      adjustment: { atLeast: null, deltaUnits: -2 },
      next: { entries: [[9500, 1]] },
    },
    {
      name: 'merging takes, from every timestamp on, the larger of the two logs',
      // from 9900: max(1, 0) = 1; from 9500: max(1, 2) = 2; from 9200: max(2, 2) = 2
      state: { entries: [[9200, 1], [9900, 1]] }, nowMs: 10_000, params: THREE,
      adjustment: { atLeast: { entries: [[9500, 2]] }, deltaUnits: 0 },
      next: { entries: [[9500, 1], [9900, 1]] },
    },
    {
      name: 'units granted elsewhere are recorded now',
      state: { entries: [[9500, 1]] }, nowMs: 10_000, params: THREE,
      adjustment: { atLeast: null, deltaUnits: 2 },
      next: { entries: [[9500, 1], [10_000, 2]] },
    },
    {
      name: 'more than limit entries: the oldest folds into the next',
      state: { entries: [[9100, 1], [9200, 1], [9300, 1]] }, nowMs: 10_000, params: THREE,
      adjustment: { atLeast: null, deltaUnits: 1 },
      next: { entries: [[9200, 2], [9300, 1], [10_000, 1]] },
    },
    {
      name: 'refunding everything leaves an empty log',
      state: { entries: [[9500, 1]] }, nowMs: 10_000, params: THREE,
      adjustment: { atLeast: null, deltaUnits: -5 },
      next: { entries: [] },
    },
    {
      name: 'a log that has expired and no delta changes nothing',
      state: { entries: [[8000, 1]] }, nowMs: 10_000, params: THREE,
      adjustment: { atLeast: null, deltaUnits: 0 },
      next: null,
    },
  ],
};

// 2 tokens a second into a bucket of 5: scaled × 1000, capacity 5000, refill 2 per ms.
const BUCKET = { limit: 2, windowMs: 1000, burst: 5 } as const;
// 3 a second, burst defaulting to 3: one token every 333.3 ms, refill 3 per ms.
const THIRDS = { limit: 3, windowMs: 1000 } as const;

const TOKEN_BUCKET: AlgorithmVectors<AlgorithmStates['token-bucket']> = {
  decide: [
    {
      name: 'an empty key is a full bucket',
      // 5000 − 1000 = 4000; full again after ceil(1000 / 2) = 500 ms
      state: null, nowMs: 10_000, params: BUCKET, cost: 1,
      expected: { allowed: true, limit: 5, remaining: 4, resetAtMs: 10_500, retryAfterMs: 0 },
      next: { scaledTokens: 4000, updatedAtMs: 10_000 },
    },
    {
      name: 'refused until the refill covers the cost',
      // 200 ms × 2 = 400; missing 600 → ceil(600 / 2) = 300 ms; full after ceil(4600 / 2) = 2300
      state: { scaledTokens: 0, updatedAtMs: 10_000 }, nowMs: 10_200, params: BUCKET, cost: 1,
      expected: { allowed: false, limit: 5, remaining: 0, resetAtMs: 12_500, retryAfterMs: 300 },
      next: null,
    },
    {
      name: 'allowed the ms the refill covers it',
      state: { scaledTokens: 0, updatedAtMs: 10_000 }, nowMs: 10_500, params: BUCKET, cost: 1,
      expected: { allowed: true, limit: 5, remaining: 0, resetAtMs: 13_000, retryAfterMs: 0 },
      next: { scaledTokens: 0, updatedAtMs: 10_500 },
    },
    {
      name: 'a fraction of a token is kept; remaining is the whole tokens',
      // 1500 − 1000 = 500 (half a token); full after ceil(4500 / 2) = 2250
      state: { scaledTokens: 1500, updatedAtMs: 10_000 }, nowMs: 10_000, params: BUCKET, cost: 1,
      expected: { allowed: true, limit: 5, remaining: 0, resetAtMs: 12_250, retryAfterMs: 0 },
      next: { scaledTokens: 500, updatedAtMs: 10_000 },
    },
    {
      name: 'a long quiet spell refills to the burst, no more',
      state: { scaledTokens: 0, updatedAtMs: 0 }, nowMs: 10_000, params: BUCKET, cost: 5,
      expected: { allowed: true, limit: 5, remaining: 0, resetAtMs: 12_500, retryAfterMs: 0 },
      next: { scaledTokens: 0, updatedAtMs: 10_000 },
    },
    {
      name: 'a cost above the burst is refused with the 1 ms hint on a full bucket',
      state: null, nowMs: 10_000, params: BUCKET, cost: 6,
      expected: { allowed: false, limit: 5, remaining: 5, resetAtMs: 10_000, retryAfterMs: 1 },
      next: null,
    },
    {
      name: 'a clock behind updatedAtMs gets no refill for time that has not passed',
      // answered at 10400: 2000 − 1000 = 1000; full after ceil(4000 / 2) = 2000
      state: { scaledTokens: 2000, updatedAtMs: 10_400 }, nowMs: 10_000, params: BUCKET, cost: 1,
      expected: { allowed: true, limit: 5, remaining: 1, resetAtMs: 12_400, retryAfterMs: 0 },
      next: { scaledTokens: 1000, updatedAtMs: 10_400 },
    },
    {
      name: 'a clock behind an empty bucket waits from updatedAtMs',
      state: { scaledTokens: 0, updatedAtMs: 10_400 }, nowMs: 10_000, params: BUCKET, cost: 1,
      expected: { allowed: false, limit: 5, remaining: 0, resetAtMs: 12_900, retryAfterMs: 900 },
      next: null,
    },
    {
      name: 'a debt is reported as 0 remaining and paid off before the bucket fills',
      // missing 8000 → ceil(8000 / 2) = 4000
      state: { scaledTokens: -3000, updatedAtMs: 10_000 }, nowMs: 10_000, params: BUCKET, cost: 0,
      expected: { allowed: true, limit: 5, remaining: 0, resetAtMs: 14_000, retryAfterMs: 0 },
      next: null,
    },
    {
      name: 'a rate that is not a whole number of ms per token',
      // 100 ms × 3 = 300; missing 700 → ceil(700 / 3) = 234; full after ceil(2700 / 3) = 900
      state: { scaledTokens: 0, updatedAtMs: 10_000 }, nowMs: 10_100, params: THIRDS, cost: 1,
      expected: { allowed: false, limit: 3, remaining: 0, resetAtMs: 11_000, retryAfterMs: 234 },
      next: null,
    },
  ],
  adjust: [
    {
      name: 'a refund puts the token back',
      state: { scaledTokens: 4000, updatedAtMs: 10_000 }, nowMs: 10_000, params: BUCKET,
      adjustment: { atLeast: null, deltaUnits: -1 },
      next: { scaledTokens: 5000, updatedAtMs: 10_000 },
    },
    {
      name: 'a refund never fills past the burst',
      state: { scaledTokens: 4500, updatedAtMs: 10_000 }, nowMs: 10_000, params: BUCKET,
      adjustment: { atLeast: null, deltaUnits: -1 },
      next: { scaledTokens: 5000, updatedAtMs: 10_000 },
    },
    {
      name: 'units granted elsewhere may leave a debt',
      state: { scaledTokens: 1000, updatedAtMs: 10_000 }, nowMs: 10_000, params: BUCKET,
      adjustment: { atLeast: null, deltaUnits: 3 },
      next: { scaledTokens: -2000, updatedAtMs: 10_000 },
    },
    {
      name: 'atLeast emptier: take it',
      state: { scaledTokens: 4000, updatedAtMs: 10_000 }, nowMs: 10_000, params: BUCKET,
      adjustment: { atLeast: { scaledTokens: 1000, updatedAtMs: 10_000 }, deltaUnits: 0 },
      next: { scaledTokens: 1000, updatedAtMs: 10_000 },
    },
    {
      name: 'both brought to the later time first: ours is then the emptier, nothing changes',
      // at 10200: ours 0 + 400 = 400, theirs 1000
      state: { scaledTokens: 0, updatedAtMs: 10_000 }, nowMs: 10_000, params: BUCKET,
      adjustment: { atLeast: { scaledTokens: 1000, updatedAtMs: 10_200 }, deltaUnits: 0 },
      next: null,
    },
    {
      name: 'a refund to an empty key (a full bucket) changes nothing',
      state: null, nowMs: 10_000, params: BUCKET,
      adjustment: { atLeast: null, deltaUnits: -1 },
      next: null,
    },
  ],
};

// 2 a second, burst 3: T = 500 ms, tolerance 1000 ms, so TAT may be up to 1500 ms ahead.
const GCRA = { limit: 2, windowMs: 1000, burst: 3 } as const;
const GCRA_ONE = { limit: 2, windowMs: 1000, burst: 1 } as const;

const LEAKY_BUCKET: AlgorithmVectors<AlgorithmStates['leaky-bucket']> = {
  decide: [
    {
      name: 'an empty key: TAT becomes now + T',
      // 500 ahead: floor((3000 − 1000) / 1000) = 2 more fit
      state: null, nowMs: 10_000, params: GCRA, cost: 1,
      expected: { allowed: true, limit: 3, remaining: 2, resetAtMs: 10_500, retryAfterMs: 0 },
      next: { tatMs: 10_500, tatRemainder: 0 },
    },
    {
      name: 'TAT at the edge of the tolerance: refused until it is T closer',
      // 11500 + 500 − now ≤ 1500 from 10500
      state: { tatMs: 11_500, tatRemainder: 0 }, nowMs: 10_000, params: GCRA, cost: 1,
      expected: { allowed: false, limit: 3, remaining: 0, resetAtMs: 11_500, retryAfterMs: 500 },
      next: null,
    },
    {
      name: 'the last unit of the burst',
      state: { tatMs: 11_000, tatRemainder: 0 }, nowMs: 10_000, params: GCRA, cost: 1,
      expected: { allowed: true, limit: 3, remaining: 0, resetAtMs: 11_500, retryAfterMs: 0 },
      next: { tatMs: 11_500, tatRemainder: 0 },
    },
    {
      name: 'a TAT in the past counts from now: a whole burst at once',
      state: { tatMs: 5000, tatRemainder: 0 }, nowMs: 10_000, params: GCRA, cost: 3,
      expected: { allowed: true, limit: 3, remaining: 0, resetAtMs: 11_500, retryAfterMs: 0 },
      next: { tatMs: 11_500, tatRemainder: 0 },
    },
    {
      name: 'T of 333⅓ ms is kept exactly, in thirds of a ms',
      // 0 + 1000 thirds = 333 ms + 1 third; 1000 thirds ahead: floor((3000 − 1000) / 1000) = 2
      state: null, nowMs: 10_000, params: THIRDS, cost: 1,
      expected: { allowed: true, limit: 3, remaining: 2, resetAtMs: 10_334, retryAfterMs: 0 },
      next: { tatMs: 10_333, tatRemainder: 1 },
    },
    {
      name: 'remaining counts the fraction of a ms the TAT is ahead by',
      // TAT 10666⅔, now 10332: 334⅔ ms = 1004 thirds ahead; floor((3000 − 1004) / 1000) = 1 (2 would end 1⅓ ms past the burst)
      state: { tatMs: 10_666, tatRemainder: 2 }, nowMs: 10_332, params: THIRDS, cost: 0,
      expected: { allowed: true, limit: 3, remaining: 1, resetAtMs: 10_667, retryAfterMs: 0 },
      next: null,
    },
    {
      name: 'a retry that lands on a fraction of a ms rounds up',
      // fits from TAT − 2T = 11000 − 666⅔ = 10333⅓ → 10334
      state: { tatMs: 11_000, tatRemainder: 0 }, nowMs: 10_000, params: THIRDS, cost: 1,
      expected: { allowed: false, limit: 3, remaining: 0, resetAtMs: 11_000, retryAfterMs: 334 },
      next: null,
    },
    {
      name: 'a cost above the burst is refused with the 1 ms hint on an idle key',
      state: null, nowMs: 10_000, params: GCRA, cost: 4,
      expected: { allowed: false, limit: 3, remaining: 3, resetAtMs: 10_000, retryAfterMs: 1 },
      next: null,
    },
    {
      name: 'burst 1: one call every T, nothing saved up',
      // 200 ahead, tolerance 0: retry at TAT; remaining floor((1000 − 400) / 1000) = 0
      state: { tatMs: 10_200, tatRemainder: 0 }, nowMs: 10_000, params: GCRA_ONE, cost: 1,
      expected: { allowed: false, limit: 1, remaining: 0, resetAtMs: 10_200, retryAfterMs: 200 },
      next: null,
    },
    {
      name: 'cost 0 reads without writing',
      state: { tatMs: 11_500, tatRemainder: 0 }, nowMs: 10_000, params: GCRA, cost: 0,
      expected: { allowed: true, limit: 3, remaining: 0, resetAtMs: 11_500, retryAfterMs: 0 },
      next: null,
    },
  ],
  adjust: [
    {
      name: 'atLeast at the same ms but a larger fraction wins: the more spent is the later TAT, to the third',
      state: { tatMs: 10_500, tatRemainder: 1 }, nowMs: 10_000, params: THIRDS,
      adjustment: { atLeast: { tatMs: 10_500, tatRemainder: 2 }, deltaUnits: 0 },
      next: { tatMs: 10_500, tatRemainder: 2 },
    },
    {
      name: 'a refund moves TAT back by T',
      state: { tatMs: 10_500, tatRemainder: 0 }, nowMs: 10_000, params: GCRA,
      adjustment: { atLeast: null, deltaUnits: -1 },
      next: { tatMs: 10_000, tatRemainder: 0 },
    },
    {
      name: 'a refund never moves TAT before now',
      state: { tatMs: 10_500, tatRemainder: 0 }, nowMs: 10_000, params: GCRA,
      adjustment: { atLeast: null, deltaUnits: -3 },
      next: { tatMs: 10_000, tatRemainder: 0 },
    },
    {
      name: 'atLeast later: take its TAT, then spend',
      state: { tatMs: 10_500, tatRemainder: 0 }, nowMs: 10_000, params: GCRA,
      adjustment: { atLeast: { tatMs: 11_000, tatRemainder: 0 }, deltaUnits: 1 },
      next: { tatMs: 11_500, tatRemainder: 0 },
    },
    {
      name: 'a TAT in the past and no delta changes nothing',
      state: { tatMs: 9000, tatRemainder: 0 }, nowMs: 10_000, params: GCRA,
      adjustment: { atLeast: null, deltaUnits: 0 },
      next: null,
    },
    {
      name: 'units granted elsewhere push TAT past the tolerance (a debt)',
      state: null, nowMs: 10_000, params: GCRA,
      adjustment: { atLeast: null, deltaUnits: 5 },
      next: { tatMs: 12_500, tatRemainder: 0 },
    },
    {
      name: 'a refund of a third-of-a-ms step borrows across the ms',
      // 10333⅓ − 333⅓ = 10000
      state: { tatMs: 10_333, tatRemainder: 1 }, nowMs: 10_000, params: THIRDS,
      adjustment: { atLeast: null, deltaUnits: -1 },
      next: { tatMs: 10_000, tatRemainder: 0 },
    },
  ],
};

export const ALGORITHM_VECTORS: { readonly [K in AlgorithmName]: AlgorithmVectors<AlgorithmStates[K]> } = {
  'fixed-window': FIXED_WINDOW,
  'sliding-window': SLIDING_WINDOW,
  'sliding-log': SLIDING_LOG,
  'token-bucket': TOKEN_BUCKET,
  'leaky-bucket': LEAKY_BUCKET,
};
