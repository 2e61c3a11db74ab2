import fc from 'fast-check';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../src/library/window/algorithm';
import { decideSet } from '../../src/library/window/decide-set';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { fleetOutageBound, outageCharge, outageWeight } from '../../src/library/limiter/outage-share';

// Time is injected: every decision takes nowMs.
const policyOf = (algorithm: AlgorithmName, limit: number, windowMs = 60_000): RateLimitPolicy => ({ name: 'p', algorithm, limit, windowMs });

describe('outageWeight', () => {
  test.each([
    // [limit, cost, instances, weight]
    [120, 1, 3, 3],
    [120, 1, 1, 1],
    [120, 1, 0, 1], // no estimate below one instance
    [120, 1, 2.9, 2], // an estimate is whole instances
    [5, 1, 100, 5], // small limit: one call per window each, never none
    [5, 5, 100, 1], // a call of the whole limit still fits
    [120, 0, 10, 1], // a read spends nothing
    [120, 7, 10, 10],
    [120, 60, 10, 2],
  ])('limit %i, cost %i, %f instances: weight %i', (limit, cost, instances, weight) => {
    expect(outageWeight([policyOf('fixed-window', limit)], cost, instances)).toBe(weight);
  });

  test('the smallest policy of a set caps the weight', () => {
    const set: PolicySet = [policyOf('fixed-window', 1000), { ...policyOf('token-bucket', 600), name: 'q', burst: 4 }];
    expect(outageWeight(set, 1, 10)).toBe(4);
    expect(outageCharge(set, 2, 10)).toBe(4);
  });

  test('the smallest policy caps the weight wherever it stands in the set', () => {
    const small = { ...policyOf('fixed-window', 5), name: 'small' };
    const large = { ...policyOf('fixed-window', 100), name: 'large' };
    expect([outageWeight([small, large], 1, 50), outageWeight([large, small], 1, 50)]).toEqual([5, 5]);
  });

  test('an estimate that is not a number counts as one instance', () => {
    expect(outageWeight([policyOf('fixed-window', 120)], 1, Number.NaN)).toBe(1);
  });
});

describe('fleetOutageBound', () => {
  test.each([
    [100, 3, 1, 100],
    [5, 100, 1, 100],
    [0, 3, 2, 6],
  ])('remaining %i on %i instances at cost %i: at most %i', (remaining, instances, cost, bound) => {
    expect(fleetOutageBound(remaining, instances, cost)).toBe(bound);
  });
});

/**
 * n instances each start their local window from the same shared state (what
 * they last saw) and charge every call its outage charge: the fleet admits at
 * most what remained (or one call per instance when that is less).
 */
function fleetAdmits(policies: PolicySet, shared: readonly unknown[], nowMs: number, instances: number, cost: number, callsEach: number, stepMs: number): number {
  let admitted = 0;
  for (let i = 0; i < instances; i++) {
    let states = shared;
    for (let c = 0; c < callsEach; c++) {
      const result = decideSet(states, nowMs + c * stepMs, policies, outageCharge(policies, cost, instances));
      if (result.allowed) {
        admitted += cost;
        states = result.states;
      }
    }
  }
  return admitted;
}

describe('the fleet during an outage, every algorithm', () => {
  const arbitrary = fc.record({
    algorithm: fc.constantFrom(...ALGORITHM_NAMES),
    limit: fc.integer({ min: 1, max: 200 }),
    spentBefore: fc.integer({ min: 0, max: 250 }),
    instances: fc.integer({ min: 1, max: 12 }),
    cost: fc.integer({ min: 1, max: 4 }),
  });

  test('at one instant: admits at most max(remaining, instances × cost)', () => {
    fc.assert(
      fc.property(arbitrary, ({ algorithm, limit, spentBefore, instances, cost }) => {
        const policies: PolicySet = [policyOf(algorithm, limit)];
        fc.pre(cost <= limit);
        const nowMs = 1_000_000;
        // The shared state the instances last saw: spentBefore units spent one unit at a time.
        let shared: readonly unknown[] = [];
        for (let i = 0; i < spentBefore; i++) shared = decideSet(shared, nowMs, policies, 1).states;
        const remaining = decideSet(shared, nowMs, policies, 0).decisions[0]!.remaining;
        const admitted = fleetAdmits(policies, shared, nowMs, instances, cost, limit + 1, 0);
        expect(admitted).toBeLessThanOrEqual(fleetOutageBound(remaining, instances, cost));
      }),
      { numRuns: 300 },
    );
  });

  test('through the rest of a fixed window: admits at most max(remaining, instances × cost); today (weight 1) instances × remaining', () => {
    fc.assert(
      fc.property(arbitrary, fc.integer({ min: 0, max: 59_999 }), ({ limit, spentBefore, instances, cost }, offsetMs) => {
        const policies: PolicySet = [policyOf('fixed-window', limit)];
        fc.pre(cost <= limit);
        const nowMs = 60_000 * 10 + offsetMs;
        const spent = Math.min(spentBefore, limit);
        const shared = spent === 0 ? [] : decideSet([], nowMs, policies, spent).states;
        const remaining = limit - spent;
        const calls = limit + 1;
        const stepMs = Math.floor((60_000 * 11 - 1 - nowMs) / calls);
        const admitted = fleetAdmits(policies, shared, nowMs, instances, cost, calls, stepMs);
        expect(admitted).toBeLessThanOrEqual(fleetOutageBound(remaining, instances, cost));
      }),
      { numRuns: 300 },
    );
  });

  test('a bucket refills at rate / n per instance: over a whole window from empty, the fleet admits about the rate', () => {
    for (const algorithm of ['token-bucket', 'leaky-bucket'] as const) {
      const policies: PolicySet = [policyOf(algorithm, 60)];
      let shared: readonly unknown[] = [];
      shared = decideSet(shared, 0, policies, 60).states;
      // One call a second on each of 3 instances for a minute: the refill is 60 a minute for the fleet.
      const admitted = fleetAdmits(policies, shared, 0, 3, 1, 60, 1000);
      expect(admitted).toBeLessThanOrEqual(60 + 3);
      expect(admitted).toBeGreaterThanOrEqual(60 - 3 * 3);
    }
  });
});
