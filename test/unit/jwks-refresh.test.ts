import fc from 'fast-check';
import { mayFetchKeys, type KeyNeed, type KeySetState } from '../../src/tokens/jwks-refresh';

const BOUNDS = { maxAgeMs: 600_000, cooldownMs: 30_000 };
const never: KeySetState = { lastAttemptAtMs: undefined, keysFetchedAtMs: undefined };

describe('mayFetchKeys', () => {
  it.each<[string, KeySetState, number, KeyNeed, boolean]>([
    ['no keys, never tried', never, 1_000, 'use', true],
    ['no keys, a failed fetch 29.999 s ago', { lastAttemptAtMs: 0, keysFetchedAtMs: undefined }, 29_999, 'use', false],
    ['no keys, a failed fetch 30 s ago', { lastAttemptAtMs: 0, keysFetchedAtMs: undefined }, 30_000, 'use', true],
    ['fresh keys, normal use', { lastAttemptAtMs: 0, keysFetchedAtMs: 0 }, 100_000, 'use', false],
    ['fresh keys, unknown kid within the cooldown', { lastAttemptAtMs: 0, keysFetchedAtMs: 0 }, 29_999, 'unknown_kid', false],
    ['fresh keys, unknown kid after the cooldown', { lastAttemptAtMs: 0, keysFetchedAtMs: 0 }, 30_000, 'unknown_kid', true],
    ['keys at their max age', { lastAttemptAtMs: 0, keysFetchedAtMs: 0 }, 600_000, 'use', true],
    ['old keys, but a refresh just failed', { lastAttemptAtMs: 600_000, keysFetchedAtMs: 0 }, 610_000, 'use', false],
    ['the clock went back before the fetch', { lastAttemptAtMs: 50_000, keysFetchedAtMs: 50_000 }, 10_000, 'use', true],
  ])('%s', (_name, state, nowMs, need, expected) => {
    expect(mayFetchKeys(state, nowMs, need, BOUNDS)).toBe(expected);
  });

  it('holds any sequence of lookups, however many ask and why, to one fetch per cooldown', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ advanceMs: fc.integer({ min: 0, max: 5_000 }), need: fc.constantFrom<KeyNeed>('use', 'unknown_kid'), fetchFails: fc.boolean() }), { maxLength: 400 }),
        (lookups) => {
          let state: KeySetState = never;
          let nowMs = 1_000_000;
          const fetchTimes: number[] = [];
          for (const lookup of lookups) {
            nowMs += lookup.advanceMs;
            if (!mayFetchKeys(state, nowMs, lookup.need, BOUNDS)) continue;
            fetchTimes.push(nowMs);
            state = { lastAttemptAtMs: nowMs, keysFetchedAtMs: lookup.fetchFails ? state.keysFetchedAtMs : nowMs };
          }
          for (let i = 1; i < fetchTimes.length; i++) expect((fetchTimes[i] as number) - (fetchTimes[i - 1] as number)).toBeGreaterThanOrEqual(BOUNDS.cooldownMs);
        },
      ),
    );
  });
});
