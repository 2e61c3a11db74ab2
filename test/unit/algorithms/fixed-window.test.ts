import fc from 'fast-check';
import { fixedWindow, type FixedWindowState, type LimitParams } from '../../../src/library/window/algorithms';
import { decideFixedWindow } from '../../../src/library/window/fixed-window';
import { ALGORITHM_VECTORS } from '../algorithm-vectors';

// decideFixedWindow and adjustFixedWindow have their own suite (test/unit/fixed-window.test.ts);
// this one is about the `fixedWindow` value that wraps them.

const vectors = ALGORITHM_VECTORS['fixed-window'];

describe('fixedWindow: table', () => {
  test.each(vectors.decide.map((v) => [v.name, v] as const))('decide: %s', (_name, v) => {
    const result = fixedWindow.decide(v.state, v.nowMs, v.params, v.cost);
    expect(result.decision).toEqual(v.expected);
    expect(result.next).toEqual(v.next);
  });
  test.each(vectors.adjust.map((v) => [v.name, v] as const))('adjust: %s', (_name, v) => {
    expect(fixedWindow.adjust(v.state, v.nowMs, v.params, v.adjustment)).toEqual(v.next);
  });
});

const paramsArb: fc.Arbitrary<LimitParams> = fc.record({ limit: fc.integer({ min: 1, max: 20 }), windowMs: fc.integer({ min: 1000, max: 60_000 }) });
const stateArb = fc.option(fc.record({ windowNumber: fc.integer({ min: 0, max: 1000 }), count: fc.integer({ min: 0, max: 25 }) }), { nil: null });

describe('fixedWindow: its promise', () => {
  test('decides exactly as decideFixedWindow, except that a cost-0 read is always allowed', () => {
    fc.assert(
      fc.property(paramsArb, stateArb, fc.integer({ min: 0, max: 60_000_000 }), fc.integer({ min: 0, max: 25 }), (params, state, nowMs, cost) => {
        const wrapped = fixedWindow.decide(state, nowMs, params, cost);
        const bare = decideFixedWindow(state, nowMs, params, cost);
        if (cost > 0 || bare.decision.allowed) expect(wrapped).toEqual(bare);
        else expect(wrapped).toEqual({ decision: { ...bare.decision, allowed: true, retryAfterMs: 0 }, next: null });
      }),
      { numRuns: 500 },
    );
  });

  test('every clock window admits at most limit units', () => {
    fc.assert(
      fc.property(
        paramsArb,
        fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 5000 }), cost: fc.integer({ min: 0, max: 21 }) }), { maxLength: 80 }),
        (params, calls) => {
          let state: FixedWindowState | null = null;
          let nowMs = 0;
          const perWindow = new Map<number, number>();
          for (const call of calls) {
            nowMs += call.gapMs;
            const { decision, next } = fixedWindow.decide(state, nowMs, params, call.cost);
            if (decision.allowed) {
              const n = Math.floor(nowMs / params.windowMs);
              perWindow.set(n, (perWindow.get(n) ?? 0) + call.cost);
            }
            if (next !== null) state = next;
          }
          for (const units of perWindow.values()) expect(units).toBeLessThanOrEqual(params.limit);
        },
      ),
      { numRuns: 300 },
    );
  });
});
