import {
  assertValidAdjustment,
  assertValidLimitParams,
  burstOf,
  intervalWords,
  isWholeNumber,
  spanWords,
  unfitRetryAfterMs,
  type LimitParams,
} from '../../../src/library/window/algorithm';

// The helpers every algorithm shares. The algorithms' own promises are in contract.test.ts and their files.

describe('assertValidLimitParams', () => {
  test.each<[string, LimitParams]>([
    ['the smallest figures', { limit: 1, windowMs: 1 }],
    ['a burst of 1', { limit: 5, windowMs: 1000, burst: 1 }],
    ['a day at a high limit, well inside exact integers', { limit: 1_000_000, windowMs: 86_400_000, burst: 2_000_000 }],
    ['limit × windowMs just under 2^51', { limit: 2 ** 39, windowMs: 4095 }],
  ])('accepts %s', (_name, params) => {
    expect(() => assertValidLimitParams(params)).not.toThrow();
  });

  test.each<[string, LimitParams, string]>([
    ['a limit of 0', { limit: 0, windowMs: 1000 }, 'limit must be a positive integer, got 0'],
    ['a fractional limit', { limit: 1.5, windowMs: 1000 }, 'limit must be a positive integer, got 1.5'],
    ['an unsafe limit', { limit: 2 ** 53, windowMs: 1 }, `limit must be a positive integer, got ${2 ** 53}`],
    ['a window of 0', { limit: 1, windowMs: 0 }, 'windowMs must be a positive integer, got 0'],
    ['a fractional window', { limit: 1, windowMs: 1.5 }, 'windowMs must be a positive integer, got 1.5'],
    ['a burst of 0', { limit: 1, windowMs: 1000, burst: 0 }, 'burst must be a positive integer, got 0'],
    ['a fractional burst', { limit: 1, windowMs: 1000, burst: 2.5 }, 'burst must be a positive integer, got 2.5'],
    ['limit × windowMs over 2^51', { limit: 2 ** 40, windowMs: 4096 }, `limit (or burst) × windowMs must stay below 2^51 for exact arithmetic, got ${2 ** 40} × 4096`],
    ['a burst × windowMs over 2^51, with a small limit', { limit: 1, windowMs: 4096, burst: 2 ** 40 }, `limit (or burst) × windowMs must stay below 2^51 for exact arithmetic, got ${2 ** 40} × 4096`],
    ['a limit × windowMs over 2^51, with a small burst', { limit: 2 ** 40, windowMs: 4096, burst: 1 }, `limit (or burst) × windowMs must stay below 2^51 for exact arithmetic, got ${2 ** 40} × 4096`],
  ])('refuses %s with a RangeError naming the field', (_name, params, message) => {
    expect(() => assertValidLimitParams(params)).toThrow(new RangeError(message));
  });
});

describe('burstOf', () => {
  test('the burst when given, else the limit', () => {
    expect(burstOf({ limit: 120, windowMs: 60_000 })).toBe(120);
    expect(burstOf({ limit: 120, windowMs: 60_000, burst: 10 })).toBe(10);
  });
});

describe('isWholeNumber', () => {
  test.each<[unknown, number | undefined, boolean]>([
    [0, undefined, true],
    [7, undefined, true],
    [Number.MAX_SAFE_INTEGER, undefined, true],
    [-1, undefined, false],
    [1.5, undefined, false],
    [2 ** 53, undefined, false],
    [Number.NaN, undefined, false],
    ['1', undefined, false],
    [null, undefined, false],
    [0, 1, false],
    [1, 1, true],
    [-5, -10, true],
    [-11, -10, false],
  ])('%p with min %p is %p', (value, min, expected) => {
    expect(min === undefined ? isWholeNumber(value) : isWholeNumber(value, min)).toBe(expected);
  });
});

describe('spanWords', () => {
  test.each([
    [3_600_000, 'hour'],
    [7_200_000, '2 hours'],
    [86_400_000, '24 hours'],
    [60_000, 'minute'],
    [120_000, '2 minutes'],
    [5_400_000, '90 minutes'],
    [1000, 'second'],
    [30_000, '30 seconds'],
    [90_000, '90 seconds'],
    [1500, '1.5 seconds'],
    [1234, '1.234 seconds'],
    [1, '0.001 seconds'],
  ])('%d ms is "%s"', (ms, words) => {
    expect(spanWords(ms)).toBe(words);
  });
});

describe('intervalWords', () => {
  test.each([
    [500, '0.5 s'],
    [60_000 / 7, '8.571 s'],
    [2, '0.002 s'],
    [1000, '1 s'],
    [0.4, '0.4 ms'],
    [1 / 3, '0.333333 ms'],
    [0.0004, '0.0004 ms'],
  ])('%d ms is "%s"', (ms, words) => {
    expect(intervalWords(ms)).toBe(words);
  });
});

describe('unfitRetryAfterMs', () => {
  test.each([
    [10_000, 3000, 7000],
    [3001, 3000, 1],
    [3000, 3000, 1],
    [2000, 3000, 1],
  ])('reset at %d, now %d: %d ms', (resetAtMs, nowMs, expected) => {
    expect(unfitRetryAfterMs(resetAtMs, nowMs)).toBe(expected);
  });
});

describe('assertValidAdjustment', () => {
  test.each([null, { atLeast: null, deltaUnits: 0 }, { atLeast: null, deltaUnits: -3 }, { atLeast: { any: 1 }, deltaUnits: Number.MAX_SAFE_INTEGER }])('accepts %p', (adjustment) => {
    expect(() => assertValidAdjustment(adjustment)).not.toThrow();
  });
  test.each([0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])('refuses a delta of %p', (deltaUnits) => {
    expect(() => assertValidAdjustment({ atLeast: null, deltaUnits })).toThrow(new RangeError(`adjustment deltaUnits must be an integer, got ${deltaUnits}`));
  });
});
