import { leakyBucket, type LimitParams, type LeakyBucketState } from '../../../src/library/window/algorithms';
import { assertBucketBound } from '../../support/bucket-bound-property';
import { ALGORITHM_VECTORS } from '../algorithm-vectors';

const vectors = ALGORITHM_VECTORS['leaky-bucket'];

describe('leakyBucket: table', () => {
  test.each(vectors.decide.map((v) => [v.name, v] as const))('decide: %s', (_name, v) => {
    const result = leakyBucket.decide(v.state, v.nowMs, v.params, v.cost);
    expect(result.decision).toEqual(v.expected);
    expect(result.next).toEqual(v.next);
  });
  test.each(vectors.adjust.map((v) => [v.name, v] as const))('adjust: %s', (_name, v) => {
    expect(leakyBucket.adjust(v.state, v.nowMs, v.params, v.adjustment)).toEqual(v.next);
  });
  test('burst defaults to the limit', () => {
    expect(leakyBucket.maxCost({ limit: 120, windowMs: 60_000 })).toBe(120);
    expect(leakyBucket.maxCost({ limit: 120, windowMs: 60_000, burst: 10 })).toBe(10);
  });
  test('a full burst, then exactly one call per interval', () => {
    const params = { limit: 2, windowMs: 1000, burst: 3 };
    let state: LeakyBucketState | null = null;
    const allowedAt: number[] = [];
    for (let nowMs = 0; nowMs <= 2000; nowMs += 50) {
      const { decision, next } = leakyBucket.decide(state, nowMs, params, 1);
      if (decision.allowed) allowedAt.push(nowMs);
      if (next !== null) state = next;
    }
    // 3 at once at 0 (one per poll: the first poll takes one), then one per 500 ms.
    expect(allowedAt).toEqual([0, 50, 100, 500, 1000, 1500, 2000]);
  });
  function follow(params: LimitParams, untilMs: number): number[] {
    let state: LeakyBucketState | null = null;
    let nowMs = 0;
    const allowedAt: number[] = [];
    while (nowMs <= untilMs) {
      const { decision, next } = leakyBucket.decide(state, nowMs, params, 1);
      if (decision.allowed) allowedAt.push(nowMs);
      if (next !== null) state = next;
      nowMs += decision.allowed ? 1 : decision.retryAfterMs;
    }
    return allowedAt;
  }

  test('T = 60000 / 7 ms does not drift: after the burst, following retryAfterMs, call m lands on ceil(m × T)', () => {
    const allowedAt = follow({ limit: 7, windowMs: 60_000, burst: 7 }, 100 * 60_000);
    expect(allowedAt.slice(0, 7)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const steady = allowedAt.slice(7);
    expect(steady.length).toBe(700);
    steady.forEach((atMs, i) => expect(atMs).toBe(Math.ceil(((i + 1) * 60_000) / 7)));
  });

  test('burst 1 has no tolerance: an arrival late by a fraction of a ms is not credited back (GCRA as specified)', () => {
    // 0, then ceil(T) = 8572 (0.57 ms late), so TAT = 8572 + T = 17143.4 → 17144.
    expect(follow({ limit: 7, windowMs: 60_000, burst: 1 }, 20_000)).toEqual([0, 8572, 17_144]);
  });
});

describe('leakyBucket: its promise', () => {
  test('admitted units in every interval of length t are at most burst + limit × t / windowMs (the boundary allowed)', () => {
    assertBucketBound(leakyBucket);
  });
});

describe('leakyBucket.parseState', () => {
  test.each<[string, unknown, LeakyBucketState | null]>([
    ['a TAT with a remainder', { tatMs: 1000, tatRemainder: 2 }, { tatMs: 1000, tatRemainder: 2 }],
    ['zeros', { tatMs: 0, tatRemainder: 0 }, { tatMs: 0, tatRemainder: 0 }],
    ['extra fields are dropped', { tatMs: 1, tatRemainder: 0, x: 1 }, { tatMs: 1, tatRemainder: 0 }],
    ['a negative TAT', { tatMs: -1, tatRemainder: 0 }, null],
    ['a negative remainder', { tatMs: 1, tatRemainder: -1 }, null],
    ['a fractional remainder', { tatMs: 1, tatRemainder: 0.5 }, null],
    ['a missing remainder', { tatMs: 1 }, null],
    ['not an object', 'tat', null],
    ['null', null, null],
  ])('%s', (_name, value, expected) => {
    expect(leakyBucket.parseState(value)).toEqual(expected);
  });
});

describe('leakyBucket.expiresAtMs: the first whole ms at or after TAT', () => {
  const params = { limit: 3, windowMs: 1000 };
  test.each<[string, LeakyBucketState, number]>([
    ['a whole-ms TAT', { tatMs: 1000, tatRemainder: 0 }, 1000],
    ['a third of a ms past it rounds up', { tatMs: 1000, tatRemainder: 1 }, 1001],
    ['a remainder of whole ms is carried first', { tatMs: 1000, tatRemainder: 7 }, 1003],
    ['a remainder of exactly whole ms', { tatMs: 1000, tatRemainder: 6 }, 1002],
  ])('%s', (_name, state, expected) => {
    expect(leakyBucket.expiresAtMs(state, params)).toBe(expected);
  });
});
