import fc from 'fast-check';
import { decideFixedWindow, windowNumberAt, type FixedWindowState } from '../../src/library/window/fixed-window';

const W = 60_000;
const policy = { limit: 5, windowMs: W };

describe('decideFixedWindow: table', () => {
  it.each([
    { name: 'first call with no state opens the window', state: null, nowMs: 1_000, cost: 1, allowed: true, remaining: 4, resetAtMs: W, retryAfterMs: 0, next: { windowNumber: 0, count: 1 } },
    { name: 'a call that spends the last unit is allowed with 0 remaining', state: { windowNumber: 0, count: 4 }, nowMs: 59_999, cost: 1, allowed: true, remaining: 0, resetAtMs: W, retryAfterMs: 0, next: { windowNumber: 0, count: 5 } },
    { name: 'a call past the limit is refused until the window ends', state: { windowNumber: 0, count: 5 }, nowMs: 45_000, cost: 1, allowed: false, remaining: 0, resetAtMs: W, retryAfterMs: 15_000, next: null },
    { name: 'a cost larger than what is left is refused and spends nothing', state: { windowNumber: 0, count: 3 }, nowMs: 10_000, cost: 3, allowed: false, remaining: 2, resetAtMs: W, retryAfterMs: 50_000, next: null },
    { name: 'a cost above the limit is refused even in a fresh window', state: null, nowMs: 0, cost: 6, allowed: false, remaining: 5, resetAtMs: W, retryAfterMs: W, next: null },
    { name: 'cost 0 reads the window without writing', state: { windowNumber: 0, count: 2 }, nowMs: 1, cost: 0, allowed: true, remaining: 3, resetAtMs: W, retryAfterMs: 0, next: null },
    { name: 'cost 0 on a spent window is allowed (a read) and writes nothing', state: { windowNumber: 0, count: 5 }, nowMs: 1, cost: 0, allowed: true, remaining: 0, resetAtMs: W, retryAfterMs: 0, next: null },
    { name: 'the first call of a new window starts fresh whatever the old count', state: { windowNumber: 0, count: 5 }, nowMs: W, cost: 2, allowed: true, remaining: 3, resetAtMs: 2 * W, retryAfterMs: 0, next: { windowNumber: 1, count: 2 } },
    { name: 'a stale state many windows old is ignored', state: { windowNumber: 3, count: 5 }, nowMs: 10 * W + 7, cost: 1, allowed: true, remaining: 4, resetAtMs: 11 * W, retryAfterMs: 0, next: { windowNumber: 10, count: 1 } },
    { name: 'a clock behind the stored window counts against the stored window', state: { windowNumber: 2, count: 4 }, nowMs: W + 30_000, cost: 1, allowed: true, remaining: 0, resetAtMs: 3 * W, retryAfterMs: 0, next: { windowNumber: 2, count: 5 } },
    { name: 'a clock behind a spent stored window is refused until the stored window ends', state: { windowNumber: 2, count: 5 }, nowMs: W + 30_000, cost: 1, allowed: false, remaining: 0, resetAtMs: 3 * W, retryAfterMs: 3 * W - (W + 30_000), next: null },
    { name: 'the last millisecond of a window still belongs to it', state: { windowNumber: 0, count: 5 }, nowMs: W - 1, cost: 1, allowed: false, remaining: 0, resetAtMs: W, retryAfterMs: 1, next: null },
  ])('$name', ({ state, nowMs, cost, allowed, remaining, resetAtMs, retryAfterMs, next }) => {
    const result = decideFixedWindow(state, nowMs, policy, cost);
    expect(result.decision).toEqual({ allowed, limit: policy.limit, remaining, resetAtMs, retryAfterMs });
    expect(result.next).toEqual(next);
  });

  it.each([
    { nowMs: 0, windowNumber: 0 },
    { nowMs: W - 1, windowNumber: 0 },
    { nowMs: W, windowNumber: 1 },
    { nowMs: 1_700_000_000_000, windowNumber: Math.floor(1_700_000_000_000 / W) },
  ])('windowNumberAt($nowMs) is floor(nowMs / windowMs) = $windowNumber', ({ nowMs, windowNumber }) => {
    expect(windowNumberAt(nowMs, W)).toBe(windowNumber);
  });
});

// ---- properties ------------------------------------------------------------

const policyArb = fc.record({ limit: fc.integer({ min: 1, max: 50 }), windowMs: fc.integer({ min: 1_000, max: 120_000 }) });
const costArb = fc.integer({ min: 0, max: 60 });
const stateArb = fc.option(fc.record({ windowNumber: fc.integer({ min: 0, max: 1_000 }), count: fc.integer({ min: 0, max: 50 }) }), { nil: null });

/** Applies calls in order the way a store does (write `next` when non-null) and returns what happened. */
function replay(p: { limit: number; windowMs: number }, calls: { nowMs: number; cost: number }[]) {
  let state: FixedWindowState | null = null;
  const log = calls.map(({ nowMs, cost }) => {
    const before = state;
    const result = decideFixedWindow(state, nowMs, p, cost);
    if (result.next !== null) state = result.next;
    return { nowMs, cost, before, ...result };
  });
  return log;
}

describe('decideFixedWindow: properties', () => {
  it('never allows more than limit cost within one window, whatever the calls, costs and times in it', () => {
    fc.assert(
      fc.property(
        policyArb,
        fc.integer({ min: 0, max: 10_000 }),
        fc.array(fc.record({ offset: fc.double({ min: 0, max: 0.999999, noNaN: true }), cost: costArb }), { maxLength: 80 }),
        (p, windowNumber, raw) => {
          const calls = raw.map(({ offset, cost }) => ({ nowMs: windowNumber * p.windowMs + Math.floor(offset * p.windowMs), cost }));
          const allowedCost = replay(p, calls).reduce((sum, r) => sum + (r.decision.allowed ? r.cost : 0), 0);
          expect(allowedCost).toBeLessThanOrEqual(p.limit);
        },
      ),
    );
  });

  it('remaining is never negative and equals limit minus what the window has spent', () => {
    fc.assert(
      fc.property(policyArb, fc.array(fc.record({ nowMs: fc.integer({ min: 0, max: 10 * 120_000 }), cost: costArb }), { maxLength: 60 }), (p, calls) => {
        const spentByWindow = new Map<number, number>();
        for (const r of replay(p, calls)) {
          const window = r.decision.resetAtMs / p.windowMs - 1;
          if (r.next !== null) spentByWindow.set(window, (spentByWindow.get(window) ?? 0) + r.cost);
          expect(r.decision.remaining).toBeGreaterThanOrEqual(0);
          expect(r.decision.remaining).toBe(p.limit - (spentByWindow.get(window) ?? 0));
        }
      }),
    );
  });

  it('a refusal says to retry exactly when its window ends, and resetAtMs is the end of the window it counted against', () => {
    fc.assert(
      fc.property(policyArb, stateArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), costArb, (p, state, nowMs, cost) => {
        const { decision } = decideFixedWindow(state, nowMs, p, cost);
        const counted = Math.max(windowNumberAt(nowMs, p.windowMs), state?.windowNumber ?? Number.NEGATIVE_INFINITY);
        expect(decision.resetAtMs).toBe((counted + 1) * p.windowMs);
        expect(decision.resetAtMs).toBeGreaterThan(nowMs);
        expect(decision.retryAfterMs).toBe(decision.allowed ? 0 : decision.resetAtMs - nowMs);
        if (!decision.allowed) expect(decision.retryAfterMs).toBeGreaterThan(0);
      }),
    );
  });

  it('refused and cost-0 calls never change state (next is null); allowed costly calls always write', () => {
    fc.assert(
      fc.property(policyArb, stateArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), costArb, (p, state, nowMs, cost) => {
        const { decision, next } = decideFixedWindow(state, nowMs, p, cost);
        if (!decision.allowed || cost === 0) expect(next).toBeNull();
        else expect(next).not.toBeNull();
      }),
    );
  });

  it('a clock running behind or backwards never mints extra capacity: total allowed per stored window <= limit', () => {
    fc.assert(
      fc.property(
        policyArb,
        // Times jump around freely inside a few windows, decreasing as often as increasing.
        fc.array(fc.record({ nowMs: fc.integer({ min: 0, max: 6 * 120_000 }), cost: fc.integer({ min: 0, max: 20 }) }), { maxLength: 120 }),
        (p, calls) => {
          const allowedByStoredWindow = new Map<number, number>();
          let storedWindow = Number.NEGATIVE_INFINITY;
          for (const r of replay(p, calls)) {
            if (r.next === null) continue;
            // The stored window never moves backwards, so an earlier window can never be reopened.
            expect(r.next.windowNumber).toBeGreaterThanOrEqual(storedWindow);
            storedWindow = r.next.windowNumber;
            allowedByStoredWindow.set(storedWindow, (allowedByStoredWindow.get(storedWindow) ?? 0) + r.cost);
          }
          for (const total of allowedByStoredWindow.values()) expect(total).toBeLessThanOrEqual(p.limit);
        },
      ),
    );
  });

  it('the first call in a new window starts fresh: decided as if there were no state', () => {
    fc.assert(
      fc.property(policyArb, stateArb, fc.integer({ min: 1, max: 5 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), costArb, (p, state, ahead, offset, cost) => {
        const base = state?.windowNumber ?? 0;
        const nowMs = (base + ahead) * p.windowMs + Math.floor(offset * p.windowMs);
        expect(decideFixedWindow(state, nowMs, p, cost)).toEqual(decideFixedWindow(null, nowMs, p, cost));
      }),
    );
  });
});
