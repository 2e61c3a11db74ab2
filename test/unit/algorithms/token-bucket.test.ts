import { tokenBucket, type TokenBucketState } from '../../../src/limiter/algorithms';
import { assertBucketBound } from '../../support/bucket-bound-property';
import { ALGORITHM_VECTORS } from '../algorithm-vectors';

const vectors = ALGORITHM_VECTORS['token-bucket'];

describe('tokenBucket: table', () => {
  test.each(vectors.decide.map((v) => [v.name, v] as const))('decide: %s', (_name, v) => {
    const result = tokenBucket.decide(v.state, v.nowMs, v.params, v.cost);
    expect(result.decision).toEqual(v.expected);
    expect(result.next).toEqual(v.next);
  });
  test.each(vectors.adjust.map((v) => [v.name, v] as const))('adjust: %s', (_name, v) => {
    expect(tokenBucket.adjust(v.state, v.nowMs, v.params, v.adjustment)).toEqual(v.next);
  });
  test('burst defaults to the limit', () => {
    expect(tokenBucket.maxCost({ limit: 120, windowMs: 60_000 })).toBe(120);
    expect(tokenBucket.maxCost({ limit: 120, windowMs: 60_000, burst: 10 })).toBe(10);
  });
  test('a full burst, then exactly one call per interval', () => {
    const params = { limit: 2, windowMs: 1000, burst: 3 };
    let state: TokenBucketState | null = null;
    const allowedAt: number[] = [];
    for (let nowMs = 0; nowMs <= 2000; nowMs += 50) {
      const { decision, next } = tokenBucket.decide(state, nowMs, params, 1);
      if (decision.allowed) allowedAt.push(nowMs);
      if (next !== null) state = next;
    }
    // 3 at once at 0 (one per poll: the first poll takes one), then one per 500 ms.
    expect(allowedAt).toEqual([0, 50, 100, 500, 1000, 1500, 2000]);
  });
});

describe('tokenBucket: its promise', () => {
  test('admitted units in every interval of length t are at most burst + limit × t / windowMs (the boundary allowed)', () => {
    assertBucketBound(tokenBucket);
  });
});
