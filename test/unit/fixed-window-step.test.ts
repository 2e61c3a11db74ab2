import fc from 'fast-check';
import { decideFixedWindow, FixedWindowStep, NO_WINDOW, type FixedWindowState } from '../../src/library/window/fixed-window';

// FixedWindowStep.decide is the fixed-window arithmetic with scalars in and the outcome in the
// object itself (issue 22: the memory store's hot path reuses one instead of allocating a result).
// decideFixedWindow is built on it; its own suite (fixed-window.test.ts) holds the rules. Here:
// the step's fields say what decideFixedWindow says, and a reused step carries nothing over.

const W = 60_000;
const policy = { limit: 5, windowMs: W };

/** The step's outcome for `state` (null: empty, passed as NO_WINDOW and 0). */
function stepOf(step: FixedWindowStep, state: FixedWindowState | null, nowMs: number, p: { limit: number; windowMs: number }, cost: number): FixedWindowStep {
  return state === null ? step.decide(NO_WINDOW, 0, nowMs, p.limit, p.windowMs, cost) : step.decide(state.windowNumber, state.count, nowMs, p.limit, p.windowMs, cost);
}

/** Every field of a step, as a plain object. */
function fieldsOf(step: FixedWindowStep) {
  const { allowed, limit, remaining, resetAtMs, retryAfterMs, windowNumber, count, changed } = step;
  return { allowed, limit, remaining, resetAtMs, retryAfterMs, windowNumber, count, changed };
}

describe('FixedWindowStep.decide: table', () => {
  it.each([
    { name: 'an empty state opens the window of nowMs', state: null, nowMs: 1_000, cost: 1, out: { allowed: true, remaining: 4, resetAtMs: W, retryAfterMs: 0, windowNumber: 0, count: 1, changed: true } },
    { name: 'the last unit is allowed with 0 remaining', state: { windowNumber: 0, count: 4 }, nowMs: 59_999, cost: 1, out: { allowed: true, remaining: 0, resetAtMs: W, retryAfterMs: 0, windowNumber: 0, count: 5, changed: true } },
    { name: 'a call past the limit is refused, keeps the count and changes nothing', state: { windowNumber: 0, count: 5 }, nowMs: 45_000, cost: 1, out: { allowed: false, remaining: 0, resetAtMs: W, retryAfterMs: 15_000, windowNumber: 0, count: 5, changed: false } },
    { name: 'a cost above what is left is refused and spends nothing', state: { windowNumber: 0, count: 3 }, nowMs: 10_000, cost: 3, out: { allowed: false, remaining: 2, resetAtMs: W, retryAfterMs: 50_000, windowNumber: 0, count: 3, changed: false } },
    { name: 'a cost above the limit on an empty state is refused with count 0', state: null, nowMs: 0, cost: 6, out: { allowed: false, remaining: 5, resetAtMs: W, retryAfterMs: W, windowNumber: 0, count: 0, changed: false } },
    { name: 'cost 0 is allowed and changes nothing', state: { windowNumber: 0, count: 2 }, nowMs: 1, cost: 0, out: { allowed: true, remaining: 3, resetAtMs: W, retryAfterMs: 0, windowNumber: 0, count: 2, changed: false } },
    { name: 'a new window starts from 0 whatever the old count', state: { windowNumber: 0, count: 5 }, nowMs: W, cost: 2, out: { allowed: true, remaining: 3, resetAtMs: 2 * W, retryAfterMs: 0, windowNumber: 1, count: 2, changed: true } },
    { name: 'a clock behind the held window counts against the held window', state: { windowNumber: 2, count: 4 }, nowMs: W + 30_000, cost: 1, out: { allowed: true, remaining: 0, resetAtMs: 3 * W, retryAfterMs: 0, windowNumber: 2, count: 5, changed: true } },
    { name: 'a clock behind a spent held window waits for the held window to end', state: { windowNumber: 2, count: 5 }, nowMs: W + 30_000, cost: 1, out: { allowed: false, remaining: 0, resetAtMs: 3 * W, retryAfterMs: 2 * W - 30_000, windowNumber: 2, count: 5, changed: false } },
  ])('$name', ({ state, nowMs, cost, out }) => {
    expect(fieldsOf(stepOf(new FixedWindowStep(), state, nowMs, policy, cost))).toEqual({ ...out, limit: policy.limit });
  });

  it('a step not yet decided allows nothing and has nothing to store', () => {
    expect(fieldsOf(new FixedWindowStep())).toEqual({ allowed: false, limit: 0, remaining: 0, resetAtMs: 0, retryAfterMs: 0, windowNumber: 0, count: 0, changed: false });
  });

  it('answers in itself: decide returns the step it was called on', () => {
    const step = new FixedWindowStep();
    expect(step.decide(NO_WINDOW, 0, 0, 5, W, 1)).toBe(step);
  });

  it('NO_WINDOW is below every window: an empty state never counts, even for a clock before the epoch', () => {
    const step = new FixedWindowStep().decide(NO_WINDOW, 99, -W * 3 + 1, 5, W, 1);
    expect(fieldsOf(step)).toEqual({ allowed: true, limit: 5, remaining: 4, resetAtMs: -2 * W, retryAfterMs: 0, windowNumber: -3, count: 1, changed: true });
  });
});

const policyArb = fc.record({ limit: fc.integer({ min: 1, max: 50 }), windowMs: fc.integer({ min: 1_000, max: 120_000 }) });
const stateArb = fc.option(fc.record({ windowNumber: fc.integer({ min: 0, max: 1_000 }), count: fc.integer({ min: 0, max: 60 }) }), { nil: null });
const nowArb = fc.integer({ min: 0, max: 1_001 * 120_000 });
const costArb = fc.integer({ min: 0, max: 60 });

describe('FixedWindowStep.decide: properties', () => {
  it('decides as decideFixedWindow does: the same decision, and the state it writes when it says changed', () => {
    fc.assert(
      fc.property(policyArb, stateArb, nowArb, costArb, (p, state, nowMs, cost) => {
        const step = stepOf(new FixedWindowStep(), state, nowMs, p, cost);
        const { decision, next } = decideFixedWindow(state, nowMs, p, cost);
        const { allowed, limit, remaining, resetAtMs, retryAfterMs } = step;
        expect({ allowed, limit, remaining, resetAtMs, retryAfterMs }).toEqual(decision);
        expect(step.changed ? { windowNumber: step.windowNumber, count: step.count } : null).toEqual(next);
      }),
    );
  });

  it('a refusal or a cost-0 call keeps the count it found in the window it counted', () => {
    fc.assert(
      fc.property(policyArb, stateArb, nowArb, costArb, (p, state, nowMs, cost) => {
        const step = stepOf(new FixedWindowStep(), state, nowMs, p, cost);
        if (step.changed) return;
        const found = state !== null && state.windowNumber === step.windowNumber ? state.count : 0;
        expect(step.count).toBe(found);
      }),
    );
  });

  it('a step reused after any other decision answers as a fresh one: nothing carries over', () => {
    fc.assert(
      fc.property(policyArb, stateArb, nowArb, costArb, policyArb, stateArb, nowArb, costArb, (p1, s1, t1, c1, p2, s2, t2, c2) => {
        const reused = new FixedWindowStep();
        stepOf(reused, s1, t1, p1, c1);
        expect(fieldsOf(stepOf(reused, s2, t2, p2, c2))).toEqual(fieldsOf(stepOf(new FixedWindowStep(), s2, t2, p2, c2)));
      }),
    );
  });
});
