import { describePolicy } from '../../src/library/window/describe-policy';
import type { RateLimitPolicy } from '../../src/library/window/policy';

describe('describePolicy', () => {
  test.each<[string, RateLimitPolicy, ReturnType<typeof describePolicy>]>([
    [
      'a policy without an algorithm is the fixed window, with no burst',
      { name: 'default', limit: 120, windowMs: 60_000 },
      { name: 'default', algorithm: 'fixed-window', limit: 120, windowSeconds: 60, maxCost: 120, words: 'at most 120 in each minute window (windows start on the clock)' },
    ],
    [
      'a sliding log has no burst, even when one is given',
      { name: 'login', algorithm: 'sliding-log', limit: 5, windowMs: 30_000, burst: 3 },
      { name: 'login', algorithm: 'sliding-log', limit: 5, windowSeconds: 30, maxCost: 5, words: 'at most 5 in any 30 seconds' },
    ],
    [
      'a sliding window has no burst',
      { name: 'day', algorithm: 'sliding-window', limit: 1000, windowMs: 86_400_000 },
      {
        name: 'day',
        algorithm: 'sliding-window',
        limit: 1000,
        windowSeconds: 86_400,
        maxCost: 1000,
        words: 'about 1000 in any 24 hours (a weighted estimate; at most 1000 in each clock 24 hours)',
      },
    ],
    [
      'a token bucket reports its burst, and a call may cost at most the burst',
      { name: 'burst', algorithm: 'token-bucket', limit: 2, windowMs: 1000, burst: 10 },
      { name: 'burst', algorithm: 'token-bucket', limit: 2, windowSeconds: 1, burst: 10, maxCost: 10, words: 'bursts of up to 10, then one call every 0.5 s' },
    ],
    [
      'a leaky bucket without a burst reports the limit as its burst',
      { name: 'smooth', algorithm: 'leaky-bucket', limit: 120, windowMs: 60_000 },
      { name: 'smooth', algorithm: 'leaky-bucket', limit: 120, windowSeconds: 60, burst: 120, maxCost: 120, words: 'one call every 0.5 s, with bursts of up to 120' },
    ],
    [
      'a window that is not a whole number of seconds keeps its fraction',
      { name: 'odd', algorithm: 'leaky-bucket', limit: 7, windowMs: 1500, burst: 1 },
      { name: 'odd', algorithm: 'leaky-bucket', limit: 7, windowSeconds: 1.5, burst: 1, maxCost: 1, words: 'one call every 0.214 s, no bursts' },
    ],
  ])('%s', (_name, policy, expected) => {
    // toStrictEqual: a window algorithm has no `burst` key at all, not `burst: undefined`.
    expect(describePolicy(policy)).toStrictEqual(expected);
  });
});
