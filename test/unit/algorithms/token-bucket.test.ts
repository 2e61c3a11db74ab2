import { tokenBucket, type TokenBucketState } from '../../../src/library/window/algorithms';
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

describe('tokenBucket.parseState', () => {
  test.each<[string, unknown, TokenBucketState | null]>([
    ['a full bucket', { scaledTokens: 600_000, updatedAtMs: 1000 }, { scaledTokens: 600_000, updatedAtMs: 1000 }],
    ['a debt is negative tokens', { scaledTokens: -5000, updatedAtMs: 0 }, { scaledTokens: -5000, updatedAtMs: 0 }],
    ['the deepest debt', { scaledTokens: -Number.MAX_SAFE_INTEGER, updatedAtMs: 0 }, { scaledTokens: -Number.MAX_SAFE_INTEGER, updatedAtMs: 0 }],
    ['extra fields are dropped', { scaledTokens: 1, updatedAtMs: 2, x: 3 }, { scaledTokens: 1, updatedAtMs: 2 }],
    ['fractional tokens', { scaledTokens: 1.5, updatedAtMs: 0 }, null],
    ['a negative time', { scaledTokens: 1, updatedAtMs: -1 }, null],
    ['a missing time', { scaledTokens: 1 }, null],
    ['tokens as text', { scaledTokens: '1', updatedAtMs: 0 }, null],
    ['not an object', 5, null],
    ['null', null, null],
  ])('%s', (_name, value, expected) => {
    expect(tokenBucket.parseState(value)).toEqual(expected);
  });
});

describe('tokenBucket.expiresAtMs: exactly when the bucket is full again', () => {
  const params = { limit: 2, windowMs: 1000, burst: 3 };
  test.each<[string, TokenBucketState, number]>([
    ['full already: its own time', { scaledTokens: 3000, updatedAtMs: 500 }, 500],
    ['one token short at 2 a second', { scaledTokens: 2000, updatedAtMs: 500 }, 1000],
    ['a fraction of a ms rounds up', { scaledTokens: 1999, updatedAtMs: 500 }, 1001],
    ['a debt is paid off first', { scaledTokens: -1000, updatedAtMs: 0 }, 2000],
    // A tier's burst may shrink under a stored state (the slot is algorithm and window only).
    ['a bucket stored under a larger burst is full at its own time', { scaledTokens: 5000, updatedAtMs: 500 }, 500],
  ])('%s', (_name, state, expected) => {
    expect(tokenBucket.expiresAtMs(state, params)).toBe(expected);
  });
  test('describe: the burst defaults to the limit', () => {
    expect(tokenBucket.describe({ limit: 120, windowMs: 60_000 })).toBe('bursts of up to 120, then one call every 0.5 s');
  });
});
