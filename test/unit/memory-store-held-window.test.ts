import fc from 'fast-check';
import { compiledSetOf } from '../../src/library/window/compiled-policy-set';
import type { WindowDecision } from '../../src/library/window/decision';
import type { PolicySet } from '../../src/library/window/policy';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';

// decideOneSync decides a fixed window that spends units in place: the slot holds a record the
// store updates instead of a new state per call (issue 22). Held against the general path
// (consumeSync, which writes a new state each time) on any mix of calls to both, refunds, reads,
// and clocks that jump ahead (evictions) or step back; and a state the store hands out must never
// change afterwards, though the record it was read from does.

const LAG_MS = 2_000;

const policyArb = fc.record({ name: fc.constant('p'), limit: fc.integer({ min: 1, max: 5 }), windowMs: fc.constantFrom(1_000, 3_000) });

const opArb = fc.record({
  kind: fc.constantFrom('one', 'one', 'one', 'sync', 'adjust', 'peek'),
  key: fc.constantFrom('k1', 'k2'),
  cost: fc.integer({ min: 0, max: 3 }),
  // An adjustment's units: a refund, or units spent past the limit (a write-back), after which a cost-0 read is still allowed.
  deltaUnits: fc.integer({ min: -3, max: 6 }),
  // Mostly small steps; sometimes far ahead (both generations dropped) or back (a lagging clock).
  gapMs: fc.oneof(fc.integer({ min: 0, max: 700 }), fc.integer({ min: 5_000, max: 20_000 }), fc.integer({ min: -3_000, max: -1 })),
});

/** The five fields of a decision, as a plain object (decideOneSync's answer has more). */
function decisionOf(d: WindowDecision): WindowDecision {
  const { allowed, limit, remaining, resetAtMs, retryAfterMs } = d;
  return { allowed, limit, remaining, resetAtMs, retryAfterMs };
}

describe('MemoryWindowStore.decideOneSync on a fixed window', () => {
  it('decides, adjusts and reads as the general path does, on any mix of calls and clocks (property)', () => {
    fc.assert(
      fc.property(policyArb, fc.array(opArb, { maxLength: 60 }), (policy, ops) => {
        const policies: PolicySet = [policy];
        const set = compiledSetOf(policies);
        const inPlace = new MemoryWindowStore(LAG_MS);
        const general = new MemoryWindowStore(LAG_MS);
        let nowMs = 1_764_000_000_000;
        for (const op of ops) {
          nowMs += op.gapMs;
          if (op.kind === 'one') {
            const expected = general.consumeSync(op.key, nowMs, policies, op.cost).decisions[0] as WindowDecision;
            expect(decisionOf(inPlace.decideOneSync(op.key, nowMs, set, op.cost))).toEqual(expected);
          } else if (op.kind === 'sync') {
            expect(inPlace.consumeSync(op.key, nowMs, policies, op.cost)).toEqual(general.consumeSync(op.key, nowMs, policies, op.cost));
          } else if (op.kind === 'adjust') {
            inPlace.adjustSync(op.key, nowMs, policies, [{ atLeast: null, deltaUnits: op.deltaUnits }]);
            general.adjustSync(op.key, nowMs, policies, [{ atLeast: null, deltaUnits: op.deltaUnits }]);
          }
          expect(inPlace.peek(op.key, policies)).toEqual(general.peek(op.key, policies));
          expect(inPlace.size).toBe(general.size);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a state it handed out never changes afterwards, while the key keeps spending in place (property)', () => {
    fc.assert(
      fc.property(policyArb, fc.array(opArb, { maxLength: 40 }), (policy, ops) => {
        const policies: PolicySet = [policy];
        const set = compiledSetOf(policies);
        const store = new MemoryWindowStore(LAG_MS);
        const handedOut: { state: unknown; asWas: string }[] = [];
        const keep = (states: readonly unknown[]): void => {
          for (const state of states) handedOut.push({ state, asWas: JSON.stringify(state) });
        };
        let nowMs = 1_764_000_000_000;
        for (const op of ops) {
          nowMs += op.gapMs;
          if (op.kind === 'sync') keep(store.consumeSync(op.key, nowMs, policies, op.cost).states);
          else if (op.kind === 'peek') keep(store.peek(op.key, policies));
          else store.decideOneSync(op.key, nowMs, set, Math.max(1, op.cost));
        }
        for (const { state, asWas } of handedOut) expect(JSON.stringify(state)).toBe(asWas);
      }),
      { numRuns: 200 },
    );
  });

  it('answers every call in one object of its own: a caller reads it before the next call', () => {
    const policies: PolicySet = [{ name: 'p', limit: 3, windowMs: 1_000 }];
    const set = compiledSetOf(policies);
    const store = new MemoryWindowStore();
    const first = store.decideOneSync('k', 1_000_000, set, 1);
    expect(decisionOf(first)).toEqual({ allowed: true, limit: 3, remaining: 2, resetAtMs: 1_001_000, retryAfterMs: 0 });
    expect(store.decideOneSync('k', 1_000_000, set, 1)).toBe(first);
    expect(first.remaining).toBe(1);
  });

  it('a refused call on a key it does not hold stores nothing', () => {
    const policies: PolicySet = [{ name: 'p', limit: 3, windowMs: 1_000 }];
    const store = new MemoryWindowStore();
    expect(store.decideOneSync('k', 1_000_000, compiledSetOf(policies), 4).allowed).toBe(false);
    expect(store.size).toBe(0);
  });

  it('reads a slot a set left empty (null) as an empty window', () => {
    const minute = { name: 'minute', limit: 3, windowMs: 60_000 };
    const bucket = { name: 'bucket', algorithm: 'token-bucket' as const, limit: 2, windowMs: 10_000 };
    const store = new MemoryWindowStore();
    // Adjusting only the bucket writes the set's states back, the minute's as null.
    store.adjustSync('k', 1_000_000, [minute, bucket], [null, { atLeast: null, deltaUnits: 1 }]);
    expect(store.peek('k', [minute])).toEqual([null]);
    const decision = store.decideOneSync('k', 1_000_000, compiledSetOf([minute]), 1);
    expect(decisionOf(decision)).toEqual({ allowed: true, limit: 3, remaining: 2, resetAtMs: 1_020_000, retryAfterMs: 0 });
  });
});

describe('MemoryWindowStore.decideOneSync key check', () => {
  const policies: PolicySet = [{ name: 'p', limit: 3, windowMs: 1_000 }];

  it('checks a key it does not hold only when asked to', () => {
    const store = new MemoryWindowStore();
    expect(() => store.decideOneSync('a/b', 1_000_000, compiledSetOf(policies), 1, true)).toThrow();
    expect(store.decideOneSync('c/d', 1_000_000, compiledSetOf(policies), 1).allowed).toBe(true);
  });

  it('does not check a key it holds: every key it holds was checked when first written', () => {
    const store = new MemoryWindowStore();
    // consumeSync takes keys as given (the limiter checks them first), so the store holds this one.
    store.consumeSync('a/b', 1_000_000, policies, 1);
    expect(store.decideOneSync('a/b', 1_000_000, compiledSetOf(policies), 1, true).remaining).toBe(1);
  });
});
