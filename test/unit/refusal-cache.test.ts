import type { FixedWindowState } from '../../src/library/window/algorithms';
import type { PolicySet } from '../../src/library/window/policy';
import { MAX_REFUSED_KEYS, RefusalCache } from '../../src/library/limiter/refusal-cache';

// Time is injected: every call says what "now" is. A fixed window of 3 a second;
// window 5 is [5000, 6000), so a full state there expires at 6000.
const policies: PolicySet = [{ name: 'second', limit: 3, windowMs: 1000 }];
const full: FixedWindowState = { windowNumber: 5, count: 3 };
const oneLeft: FixedWindowState = { windowNumber: 5, count: 2 };

describe('RefusalCache', () => {
  test('an unknown key has no cached refusal: ask the store', () => {
    const cache = new RefusalCache();
    expect(cache.refusal('k', 5000, policies, 1)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test('a remembered refusal is re-decided on the cached states, and stays while it refuses', () => {
    const cache = new RefusalCache();
    cache.remember('k', [full], policies, 5100);
    expect(cache.size).toBe(1);
    const refusal = cache.refusal('k', 5500, policies, 1);
    expect(refusal).toEqual({
      decisions: [{ allowed: false, limit: 3, remaining: 0, resetAtMs: 6000, retryAfterMs: 500 }],
      allowed: false,
      states: [full],
      changed: false,
    });
    expect(cache.refusal('k', 5999, policies, 1)?.allowed).toBe(false);
    expect(cache.size).toBe(1);
  });

  test('a call the cached states would allow goes to the store, and the entry goes', () => {
    const cache = new RefusalCache();
    // Refused at cost 2 with one unit left: a cost-1 call would pass on these states.
    cache.remember('k', [oneLeft], policies, 5100);
    expect(cache.refusal('k', 5200, policies, 2)?.allowed).toBe(false);
    expect(cache.refusal('k', 5200, policies, 1)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(cache.refusal('k', 5200, policies, 2)).toBeUndefined();
  });

  test('a cost-0 read is never answered from the cache and keeps a live entry', () => {
    const cache = new RefusalCache();
    cache.remember('k', [full], policies, 5100);
    expect(cache.refusal('k', 5200, policies, 0)).toBeUndefined();
    expect(cache.size).toBe(1);
    expect(cache.refusal('k', 5200, policies, 1)?.allowed).toBe(false);
  });

  test('at the moment the states expire the entry is dropped, for a read and for a call alike', () => {
    const cache = new RefusalCache();
    cache.remember('a', [full], policies, 5100);
    cache.remember('b', [full], policies, 5100);
    expect(cache.refusal('a', 6000, policies, 1)).toBeUndefined();
    expect(cache.refusal('b', 6000, policies, 0)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test('an expired entry is never answered from, even for a cost no state could allow', () => {
    // A cost above the limit is refused on any state, so only the expiry check sends it to the store.
    const cache = new RefusalCache();
    cache.remember('a', [full], policies, 5100);
    cache.remember('b', [full], policies, 5100);
    expect(cache.refusal('a', 5999, policies, 4)?.allowed).toBe(false);
    expect(cache.refusal('a', 6000, policies, 4)).toBeUndefined();
    expect(cache.refusal('b', 6001, policies, 4)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test('a cost-0 read of a live entry keeps it; of an expired one drops it', () => {
    const cache = new RefusalCache();
    cache.remember('k', [full], policies, 5100);
    expect(cache.refusal('k', 5999, policies, 0)).toBeUndefined();
    expect(cache.size).toBe(1);
    expect(cache.refusal('k', 6001, policies, 0)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test('states that are empty, or already expired at nowMs, are not remembered', () => {
    const cache = new RefusalCache();
    cache.remember('empty', [null], policies, 5100);
    cache.remember('expired', [full], policies, 6000);
    cache.remember('later', [full], policies, 7000);
    expect(cache.size).toBe(0);
    cache.remember('live', [full], policies, 5999);
    expect(cache.size).toBe(1);
  });

  test('when full, entries expired at nowMs are swept before adding, and live ones stay', () => {
    const cache = new RefusalCache(3);
    // Inserted first, so a cache that skipped the sweep would evict it as the oldest.
    cache.remember('live', [full], policies, 5000);
    cache.remember('old-1', [{ windowNumber: 1, count: 3 }], policies, 1000);
    // Expires at 3000 exactly: that is expired at 3000.
    cache.remember('old-2', [{ windowNumber: 2, count: 3 }], policies, 2000);
    cache.remember('new', [full], policies, 3000);
    expect(cache.size).toBe(2);
    expect(cache.refusal('live', 3000, policies, 1)?.allowed).toBe(false);
    expect(cache.refusal('new', 3000, policies, 1)?.allowed).toBe(false);
  });

  test('when full of live entries, the oldest is forgotten to make room', () => {
    const cache = new RefusalCache(2);
    cache.remember('first', [full], policies, 5000);
    cache.remember('second', [full], policies, 5000);
    cache.remember('third', [full], policies, 5000);
    expect(cache.size).toBe(2);
    expect(cache.refusal('first', 5000, policies, 1)).toBeUndefined();
    expect(cache.refusal('second', 5000, policies, 1)?.allowed).toBe(false);
    expect(cache.refusal('third', 5000, policies, 1)?.allowed).toBe(false);
  });

  test('below the bound nothing is evicted, expired or not', () => {
    const cache = new RefusalCache(3);
    cache.remember('old', [{ windowNumber: 1, count: 3 }], policies, 1000);
    cache.remember('live', [full], policies, 5000);
    expect(cache.size).toBe(2);
  });

  test('the default bound is MAX_REFUSED_KEYS', () => {
    const cache = new RefusalCache();
    for (let i = 0; i <= MAX_REFUSED_KEYS; i++) cache.remember(`k${i}`, [full], policies, 5000);
    expect(cache.size).toBe(MAX_REFUSED_KEYS);
    expect(MAX_REFUSED_KEYS).toBe(100_000);
  });

  test('forget drops one key; clear drops them all', () => {
    const cache = new RefusalCache();
    cache.remember('a', [full], policies, 5000);
    cache.remember('b', [full], policies, 5000);
    cache.forget('a');
    expect(cache.refusal('a', 5000, policies, 1)).toBeUndefined();
    expect(cache.size).toBe(1);
    cache.clear();
    expect(cache.size).toBe(0);
  });

  test('a set is refused from the cache when any of its policies refuses', () => {
    const two: PolicySet = [policies[0], { name: 'minute', limit: 100, windowMs: 60_000 }];
    const cache = new RefusalCache();
    cache.remember('k', [full, { windowNumber: 0, count: 10 }], two, 5100);
    const refusal = cache.refusal('k', 5200, two, 1);
    expect(refusal?.allowed).toBe(false);
    expect(refusal?.decisions.map((d) => d.allowed)).toEqual([false, true]);
  });
});
