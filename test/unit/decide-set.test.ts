import fc from 'fast-check';
import { ALGORITHMS, type FixedWindowState, type TokenBucketState } from '../../src/library/window/algorithms';
import { adjustSet, algorithmFor, assertValidAdjustments, decideSet, mostRestrictive, policyDecisions, setExpiresAtMs } from '../../src/library/window/decide-set';
import type { PolicyDecision } from '../../src/library/window/decision';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';

// Time is injected as nowMs. A tier of a burst (3 a second, fixed window) and a minute (5, token bucket).
const second: RateLimitPolicy = { name: 'second', limit: 3, windowMs: 1000 };
const minute: RateLimitPolicy = { name: 'minute', algorithm: 'token-bucket', limit: 5, windowMs: 60_000 };
const tier: PolicySet = [second, minute];

describe('algorithmFor', () => {
  test('the policy’s algorithm; no algorithm is the fixed window', () => {
    expect(algorithmFor(second)).toBe(ALGORITHMS['fixed-window']);
    expect(algorithmFor(minute)).toBe(ALGORITHMS['token-bucket']);
  });
});

describe('decideSet', () => {
  test('one policy: its decision, the state it wrote, changed', () => {
    const result = decideSet([], 500, [second], 1);
    expect(result).toEqual({
      decisions: [{ allowed: true, limit: 3, remaining: 2, resetAtMs: 1000, retryAfterMs: 0 }],
      allowed: true,
      states: [{ windowNumber: 0, count: 1 }],
      changed: true,
    });
  });

  test('one policy refused: the state handed in, unchanged', () => {
    const full: FixedWindowState = { windowNumber: 0, count: 3 };
    const result = decideSet([full], 500, [second], 1);
    expect(result.allowed).toBe(false);
    expect(result.states).toEqual([full]);
    expect(result.states[0]).toBe(full);
    expect(result.changed).toBe(false);
    expect(result.decisions).toEqual([{ allowed: false, limit: 3, remaining: 0, resetAtMs: 1000, retryAfterMs: 500 }]);
  });

  test('a set refused with a short states array still answers one state per policy', () => {
    const full: FixedWindowState = { windowNumber: 0, count: 3 };
    const result = decideSet([full], 500, tier, 1);
    expect(result.allowed).toBe(false);
    expect(result.states).toEqual([full, null]);
    expect(result.changed).toBe(false);
  });

  test('one policy refused with no state given: one state per policy, empty', () => {
    expect(decideSet([], 500, [second], 4).states).toEqual([null]);
  });

  test('every policy allows: each is charged and the set is changed', () => {
    const result = decideSet([null, null], 500, tier, 2);
    expect(result.allowed).toBe(true);
    expect(result.changed).toBe(true);
    expect(result.decisions.map((d) => d.remaining)).toEqual([1, 3]);
    expect(result.states).toEqual([
      { windowNumber: 0, count: 2 },
      { scaledTokens: 3 * 60_000, updatedAtMs: 500 },
    ]);
  });

  test('states shorter than the set read as empty', () => {
    expect(decideSet([], 500, tier, 1).decisions.map((d) => d.remaining)).toEqual([2, 4]);
  });

  test('cost 0 over a set reads without writing: allowed, unchanged, the same states', () => {
    const states = [{ windowNumber: 0, count: 1 }, null];
    const result = decideSet(states, 500, tier, 0);
    expect(result.allowed).toBe(true);
    expect(result.changed).toBe(false);
    expect(result.states).toEqual(states);
    expect(result.decisions.map((d) => d.remaining)).toEqual([2, 5]);
  });

  test('one policy refuses: nothing is charged, and the others report their budget unspent', () => {
    const spentMinute: TokenBucketState = { scaledTokens: 60_000, updatedAtMs: 500 };
    const states = [null, spentMinute];
    const result = decideSet(states, 500, tier, 2);
    expect(result.allowed).toBe(false);
    expect(result.changed).toBe(false);
    expect(result.states).toBe(states);
    // The second allows 2 of 3 and reports all 3: the refused call did not take them.
    expect(result.decisions[0]).toEqual({ allowed: true, limit: 3, remaining: 3, resetAtMs: 1000, retryAfterMs: 0 });
    expect(result.decisions[1]).toEqual({ allowed: false, limit: 5, remaining: 1, resetAtMs: 500 + 4 * 12_000, retryAfterMs: 12_000 });
  });

  test('property: a set is allowed exactly when every policy alone allows; refused sets keep every state', () => {
    const stateArb = fc.option(fc.record({ windowNumber: fc.integer({ min: 0, max: 3 }), count: fc.integer({ min: 0, max: 4 }) }), { nil: null });
    const bucketArb = fc.option(fc.record({ scaledTokens: fc.integer({ min: -60_000, max: 5 * 60_000 }), updatedAtMs: fc.integer({ min: 0, max: 4000 }) }), { nil: null });
    fc.assert(
      fc.property(stateArb, bucketArb, fc.integer({ min: 0, max: 4000 }), fc.integer({ min: 0, max: 6 }), (a, b, nowMs, cost) => {
        const states = [a, b];
        const result = decideSet(states, nowMs, tier, cost);
        const alone = tier.map((policy, i) => algorithmFor(policy).decide(states[i] ?? null, nowMs, policy, cost));
        expect(result.allowed).toBe(alone.every((r) => r.decision.allowed));
        if (result.allowed) {
          expect(result.decisions).toEqual(alone.map((r) => r.decision));
          expect(result.states).toEqual(alone.map((r, i) => r.next ?? states[i]));
          expect(result.changed).toBe(alone.some((r) => r.next !== null));
        } else {
          expect(result.states).toBe(states);
          expect(result.changed).toBe(false);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('adjustSet', () => {
  const states = [{ windowNumber: 0, count: 2 }, { scaledTokens: 2 * 60_000, updatedAtMs: 500 }];

  test('each state takes its own adjustment; null leaves it untouched', () => {
    expect(adjustSet(states, 500, tier, [{ atLeast: null, deltaUnits: -1 }, null])).toEqual([{ windowNumber: 0, count: 1 }, states[1]]);
    expect(adjustSet(states, 500, tier, [null, { atLeast: null, deltaUnits: 1 }])).toEqual([states[0], { scaledTokens: 60_000, updatedAtMs: 500 }]);
  });

  test('adjustments shorter than the set leave the rest untouched; states shorter read as empty', () => {
    const adjusted = adjustSet([states[0]], 500, tier, [{ atLeast: null, deltaUnits: 1 }]);
    expect(adjusted).toEqual([{ windowNumber: 0, count: 3 }, null]);
  });

  test('null when nothing changes: no adjustments, or adjustments that change nothing', () => {
    expect(adjustSet(states, 500, tier, [null, null])).toBeNull();
    expect(adjustSet(states, 500, tier, [])).toBeNull();
    expect(adjustSet(states, 500, tier, [{ atLeast: null, deltaUnits: 0 }, { atLeast: null, deltaUnits: 0 }])).toBeNull();
  });

  test('one change is enough to write the set, the unchanged states as they were', () => {
    const adjusted = adjustSet(states, 500, tier, [{ atLeast: null, deltaUnits: 0 }, { atLeast: null, deltaUnits: -1 }]);
    expect(adjusted).toEqual([states[0], { scaledTokens: 3 * 60_000, updatedAtMs: 500 }]);
    expect(adjusted?.[0]).toBe(states[0]);
  });
});

describe('assertValidAdjustments', () => {
  test('none, or integer deltas with floors of the policy’s own algorithm, pass', () => {
    expect(() => assertValidAdjustments(tier, [])).not.toThrow();
    expect(() => assertValidAdjustments(tier, [null, null])).not.toThrow();
    expect(() =>
      assertValidAdjustments(tier, [
        { atLeast: { windowNumber: 1, count: 2 }, deltaUnits: -3 },
        { atLeast: { scaledTokens: 0, updatedAtMs: 1 }, deltaUnits: 2 },
      ]),
    ).not.toThrow();
    expect(() => assertValidAdjustments(tier, [{ atLeast: null, deltaUnits: 1 }])).not.toThrow();
  });

  test('a fractional delta is refused', () => {
    expect(() => assertValidAdjustments(tier, [null, { atLeast: null, deltaUnits: 0.5 }])).toThrow(new RangeError('adjustment deltaUnits must be an integer, got 0.5'));
  });

  test('a floor that is not a state of the policy’s algorithm is refused, naming the policy and the algorithm', () => {
    expect(() => assertValidAdjustments(tier, [null, { atLeast: { windowNumber: 1, count: 2 }, deltaUnits: 0 }])).toThrow(
      new RangeError('adjustment atLeast for policy "minute" is not a token-bucket state: {"windowNumber":1,"count":2}'),
    );
    expect(() => assertValidAdjustments([second], [{ atLeast: { scaledTokens: 1, updatedAtMs: 1 }, deltaUnits: 0 }])).toThrow(
      new RangeError('adjustment atLeast for policy "second" is not a fixed-window state: {"scaledTokens":1,"updatedAtMs":1}'),
    );
  });
});

describe('setExpiresAtMs', () => {
  test('null while every state is empty', () => {
    expect(setExpiresAtMs([], tier)).toBeNull();
    expect(setExpiresAtMs([null, null], tier)).toBeNull();
  });

  test('the latest expiry of the states there are, whichever policy holds it', () => {
    const window: FixedWindowState = { windowNumber: 4, count: 1 };
    // 2 of 5 tokens at 1000: full again 3 × 12 000 ms later.
    const bucket: TokenBucketState = { scaledTokens: 2 * 60_000, updatedAtMs: 1000 };
    expect(setExpiresAtMs([window, null], tier)).toBe(5000);
    expect(setExpiresAtMs([null, bucket], tier)).toBe(37_000);
    expect(setExpiresAtMs([window, bucket], tier)).toBe(37_000);
    expect(setExpiresAtMs([{ windowNumber: 40, count: 1 }, bucket], tier)).toBe(41_000);
  });
});

describe('policyDecisions', () => {
  test('each decision named by its policy, with its window, its published units per window and algorithm', () => {
    const decisions = [
      { allowed: true, limit: 3, remaining: 2, resetAtMs: 1000, retryAfterMs: 0 },
      { allowed: false, limit: 5, remaining: 0, resetAtMs: 60_000, retryAfterMs: 12_000 },
    ];
    expect(policyDecisions(decisions, tier)).toEqual([
      { ...decisions[0], policyName: 'second', windowMs: 1000, perWindow: second.limit, algorithm: 'fixed-window' },
      { ...decisions[1], policyName: 'minute', windowMs: 60_000, perWindow: minute.limit, algorithm: 'token-bucket' },
    ]);
  });
});

describe('mostRestrictive', () => {
  const base: PolicyDecision = { allowed: true, limit: 10, remaining: 5, resetAtMs: 1000, retryAfterMs: 0, policyName: 'a', windowMs: 1000, algorithm: 'fixed-window' };
  const d = (fields: Partial<PolicyDecision>): PolicyDecision => ({ ...base, ...fields });

  test.each<[string, PolicyDecision[], string]>([
    ['one decision is itself', [d({ policyName: 'only' })], 'only'],
    ['a refusal binds over an allowance, in either order', [d({ policyName: 'ok' }), d({ policyName: 'no', allowed: false, retryAfterMs: 5 })], 'no'],
    ['a refusal binds over an allowance, refusal first', [d({ policyName: 'no', allowed: false, retryAfterMs: 5 }), d({ policyName: 'ok', remaining: 0 })], 'no'],
    ['of two refusals, the one that frees last', [d({ policyName: 'soon', allowed: false, retryAfterMs: 5 }), d({ policyName: 'late', allowed: false, retryAfterMs: 9 })], 'late'],
    ['of two refusals, the one that frees last, listed first', [d({ policyName: 'late', allowed: false, retryAfterMs: 9 }), d({ policyName: 'soon', allowed: false, retryAfterMs: 5 })], 'late'],
    ['of two refusals freeing together, the first', [d({ policyName: 'first', allowed: false, retryAfterMs: 9 }), d({ policyName: 'second', allowed: false, retryAfterMs: 9, windowMs: 9000 })], 'first'],
    ['of allowances, the one with least left', [d({ policyName: 'more', remaining: 5 }), d({ policyName: 'less', remaining: 2 })], 'less'],
    ['of allowances, the one with least left, listed first', [d({ policyName: 'less', remaining: 2 }), d({ policyName: 'more', remaining: 5, windowMs: 9000 })], 'less'],
    ['on a tie, the longer window', [d({ policyName: 'short', windowMs: 1000 }), d({ policyName: 'long', windowMs: 60_000 })], 'long'],
    ['on a tie, the longer window, listed first', [d({ policyName: 'long', windowMs: 60_000 }), d({ policyName: 'short', windowMs: 1000 })], 'long'],
    ['on a full tie, the first', [d({ policyName: 'first' }), d({ policyName: 'second' })], 'first'],
    ['the binding one may be last of three', [d({ policyName: 'x', remaining: 4 }), d({ policyName: 'y', remaining: 3 }), d({ policyName: 'z', remaining: 1 })], 'z'],
  ])('%s', (_name, decisions, expected) => {
    expect(mostRestrictive(decisions).policyName).toBe(expected);
  });
});
