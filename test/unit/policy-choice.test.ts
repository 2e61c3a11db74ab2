import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { policySetOf, requiredPolicySet, setIdOf } from '../../src/library/window/policy-choice';

/** A policy whose fields count how often they are read: validation and slot ids read them, a cache hit does not. */
function countingPolicy(fields: RateLimitPolicy): { policy: RateLimitPolicy; reads: () => number } {
  let reads = 0;
  const policy = {} as RateLimitPolicy;
  for (const [key, value] of Object.entries(fields)) {
    Object.defineProperty(policy, key, {
      enumerable: true,
      get: () => {
        reads += 1;
        return value as unknown;
      },
    });
  }
  return { policy, reads: () => reads };
}

const minute: RateLimitPolicy = { name: 'minute', limit: 120, windowMs: 60_000 };
const second: RateLimitPolicy = { name: 'second', algorithm: 'token-bucket', limit: 10, windowMs: 1000, burst: 5 };
const fallback: PolicySet = [{ name: 'fallback', limit: 1, windowMs: 1000 }];

describe('policySetOf', () => {
  test('neither policy nor policies: the fallback, as given', () => {
    expect(policySetOf({}, fallback)).toBe(fallback);
  });

  test('policies: that very array, validated', () => {
    const set: PolicySet = [minute, second];
    expect(policySetOf({ policies: set }, fallback)).toBe(set);
    expect(() => policySetOf({ policies: [minute, { ...minute }] }, fallback)).toThrow(new RangeError('two policies in one set are both named "minute"'));
  });

  test('one policy: a set of just it, the same array on every call', () => {
    const first = policySetOf({ policy: second }, fallback);
    expect(first).toEqual([second]);
    expect(policySetOf({ policy: second }, fallback)).toBe(first);
  });

  test('an invalid single policy is refused with a RangeError naming the field', () => {
    expect(() => policySetOf({ policy: { name: 'p', limit: 0, windowMs: 1000 } }, fallback)).toThrow(
      new RangeError('policy "p": limit must be a positive integer, got 0'),
    );
  });

  test('both policy and policies is a TypeError', () => {
    expect(() => policySetOf({ policy: minute, policies: [second] }, fallback)).toThrow(new TypeError('pass policy or policies, not both'));
  });

  test('a set is validated on its first use only: later calls read none of its fields', () => {
    const counted = countingPolicy({ name: 'counted', limit: 5, windowMs: 1000 });
    const set: PolicySet = [counted.policy];
    policySetOf({ policies: set }, fallback);
    const afterFirst = counted.reads();
    expect(afterFirst).toBeGreaterThan(0);
    policySetOf({ policies: set }, fallback);
    policySetOf({ policies: set }, fallback);
    expect(counted.reads()).toBe(afterFirst);
  });

  test('a single policy is validated on its first use only', () => {
    const counted = countingPolicy({ name: 'single', limit: 5, windowMs: 1000 });
    policySetOf({ policy: counted.policy }, fallback);
    const afterFirst = counted.reads();
    expect(afterFirst).toBeGreaterThan(0);
    policySetOf({ policy: counted.policy }, fallback);
    expect(counted.reads()).toBe(afterFirst);
  });
});

describe('requiredPolicySet', () => {
  test('the set named by policy or policies', () => {
    const set: PolicySet = [minute, second];
    expect(requiredPolicySet({ policies: set }, 'owner')).toBe(set);
    expect(requiredPolicySet({ policy: minute }, 'owner')).toEqual([minute]);
  });

  test('naming none is a TypeError that names the owner', () => {
    expect(() => requiredPolicySet({}, 'createRateLimiter')).toThrow(new TypeError('createRateLimiter: policy or policies is required'));
  });
});

describe('setIdOf', () => {
  test('the state slots in order, comma-separated: sets with the same slots share an id whatever the names and limits', () => {
    expect(setIdOf([minute, second])).toBe('fixed-window:60000,token-bucket:1000');
    expect(setIdOf([second, minute])).toBe('token-bucket:1000,fixed-window:60000');
    expect(setIdOf([{ ...minute, name: 'other', limit: 7 }])).toBe('fixed-window:60000');
  });

  test('is computed once per set: later calls read none of its fields', () => {
    const counted = countingPolicy({ name: 'id', algorithm: 'sliding-log', limit: 5, windowMs: 2000 });
    const set: PolicySet = [counted.policy];
    expect(setIdOf(set)).toBe('sliding-log:2000');
    const afterFirst = counted.reads();
    expect(setIdOf(set)).toBe('sliding-log:2000');
    expect(counted.reads()).toBe(afterFirst);
  });
});
