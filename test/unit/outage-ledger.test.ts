import fc from 'fast-check';
import type { WindowDecision } from '../../src/limiter/decision';
import { OutageLedger } from '../../src/limiter/outage-ledger';
import type { RateLimitPolicy } from '../../src/limiter/policy';

const W = 60_000;
const policy: RateLimitPolicy = { name: 'default', limit: 10, windowMs: W };
const N = 500; // window number used throughout
const at = (offsetMs = 1_000) => N * W + offsetMs;

function shared(remaining: number, windowNumber = N): WindowDecision {
  return { allowed: true, limit: policy.limit, remaining, resetAtMs: (windowNumber + 1) * W, retryAfterMs: 0 };
}

describe('OutageLedger', () => {
  test.each([
    ['nothing known', [], { windowNumber: N, atLeastCount: 0, deltaUnits: 0 }],
    ['the spent count of the last shared decision', [shared(6)], { windowNumber: N, atLeastCount: 4, deltaUnits: 0 }],
    ['a later, lower answer does not lower what is known (replies can overtake)', [shared(3), shared(5)], { windowNumber: N, atLeastCount: 7, deltaUnits: 0 }],
    ['a newer window replaces an older one, even with a lower count', [shared(0, N - 1), shared(9)], { windowNumber: N, atLeastCount: 1, deltaUnits: 0 }],
    ['a count from a passed window is no floor', [shared(2, N - 1)], { windowNumber: N, atLeastCount: 0, deltaUnits: 0 }],
    ['a window spent past its limit reads as the limit', [{ ...shared(0), allowed: false }], { windowNumber: N, atLeastCount: 10, deltaUnits: 0 }],
  ] as const)('floorFor: %s', (_name, decisions, expected) => {
    const ledger = new OutageLedger();
    for (const d of decisions) ledger.observeShared('k', d, policy);
    expect(ledger.floorFor('k', at(), policy)).toEqual(expected);
  });

  test('grants accumulate per window and carry the floor known when the first was granted', () => {
    const ledger = new OutageLedger();
    ledger.observeShared('k', shared(7), policy);
    ledger.grantLocally('k', 'tok', policy, N, 2);
    ledger.grantLocally('k', 'tok', policy, N, 1);
    expect(ledger.pendingUnits).toBe(3);
    expect(ledger.take('k', at())).toEqual({ key: 'tok', policy, adjustment: { windowNumber: N, atLeastCount: 3, deltaUnits: 3 } });
    expect(ledger.hasPending).toBe(false);
  });

  test('negative grants give units back but never below zero, and alone create nothing', () => {
    const ledger = new OutageLedger();
    ledger.grantLocally('k', 'tok', policy, N, -1);
    expect(ledger.hasPending).toBe(false);
    ledger.grantLocally('k', 'tok', policy, N, 2);
    ledger.grantLocally('k', 'tok', policy, N, -5);
    expect(ledger.pendingUnits).toBe(0);
  });

  test('a grant in a new window replaces the passed one', () => {
    const ledger = new OutageLedger();
    ledger.grantLocally('k', 'tok', policy, N - 1, 4);
    ledger.grantLocally('k', 'tok', policy, N, 1);
    expect(ledger.pendingUnits).toBe(1);
  });

  test('drain returns live reconciliations and forgets passed ones; take does the same for one key', () => {
    const ledger = new OutageLedger();
    ledger.grantLocally('old', 'tok_old', policy, N - 1, 4);
    ledger.grantLocally('live', 'tok_live', policy, N, 2);
    ledger.grantLocally('gone', 'tok_gone', policy, N - 1, 1);
    expect(ledger.take('gone', at())).toBeUndefined();
    expect(ledger.drain(at()).map((p) => [p.key, p.adjustment.deltaUnits])).toEqual([['tok_live', 2]]);
    expect(ledger.hasPending).toBe(false);
  });

  test('restore merges a failed write-back with what was granted since', () => {
    const ledger = new OutageLedger();
    ledger.grantLocally('k', 'tok', policy, N, 2);
    const [pending] = ledger.drain(at());
    ledger.grantLocally('k', 'tok', policy, N, 1);
    ledger.restore('k', pending!);
    expect(ledger.take('k', at())?.adjustment.deltaUnits).toBe(3);
    ledger.restore('k', pending!);
    expect(ledger.take('k', at())).toEqual(pending);
  });

  test('clear forgets everything', () => {
    const ledger = new OutageLedger();
    ledger.observeShared('k', shared(1), policy);
    ledger.grantLocally('k', 'tok', policy, N, 1);
    ledger.clear();
    expect(ledger.hasPending).toBe(false);
    expect(ledger.floorFor('k', at(), policy).atLeastCount).toBe(0);
  });

  test('property: what is drained equals what was granted in the live window, whatever the order', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ key: fc.constantFrom('a', 'b', 'c'), window: fc.constantFrom(N - 1, N), units: fc.integer({ min: -2, max: 5 }) })), (grants) => {
        const ledger = new OutageLedger();
        const expected = new Map<string, number>();
        const lastWindow = new Map<string, number>();
        for (const g of grants) {
          ledger.grantLocally(g.key, g.key, policy, g.window, g.units);
          const sameWindow = lastWindow.get(g.key) === g.window;
          const prior = sameWindow ? (expected.get(g.key) ?? 0) : 0;
          if (!sameWindow && g.units <= 0) continue;
          expected.set(g.key, Math.max(0, prior + g.units));
          lastWindow.set(g.key, g.window);
        }
        const drained = new Map(ledger.drain(at()).map((p) => [p.key, p.adjustment.deltaUnits]));
        for (const [key, units] of expected) {
          if (lastWindow.get(key) === N) expect(drained.get(key)).toBe(units);
          else expect(drained.has(key)).toBe(false);
        }
      }),
    );
  });
});
