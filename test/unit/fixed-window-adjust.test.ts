import fc from 'fast-check';
import {
  adjustFixedWindow,
  assertValidAdjustment,
  windowNumberAt,
  type FixedWindowState,
  type WindowAdjustment,
} from '../../src/library/window/fixed-window';

const W = 60_000;
const policy = { windowMs: W };
/** A moment inside window 10. */
const NOW = 10 * W + 12_345;

describe('adjustFixedWindow: table', () => {
  it.each<{ name: string; state: FixedWindowState | null; nowMs?: number; adjustment: WindowAdjustment; next: FixedWindowState | null }>([
    { name: 'a refund lowers the count of the current window', state: { windowNumber: 10, count: 4 }, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: -1 }, next: { windowNumber: 10, count: 3 } },
    { name: 'a reconciliation adds locally granted calls to the current window', state: { windowNumber: 10, count: 2 }, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: 3 }, next: { windowNumber: 10, count: 5 } },
    { name: 'a refund larger than the count stops at 0', state: { windowNumber: 10, count: 2 }, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: -5 }, next: { windowNumber: 10, count: 0 } },
    { name: 'a refund on a store with no state writes nothing (0 stays 0)', state: null, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: -1 }, next: null },
    { name: 'atLeastCount restores a store that restarted empty', state: null, adjustment: { windowNumber: 10, atLeastCount: 4, deltaUnits: 0 }, next: { windowNumber: 10, count: 4 } },
    { name: 'atLeastCount then the delta: a restarted store relearns the count and takes the correction', state: null, adjustment: { windowNumber: 10, atLeastCount: 4, deltaUnits: 2 }, next: { windowNumber: 10, count: 6 } },
    { name: 'atLeastCount raises a stored count that is lower, then refunds', state: { windowNumber: 10, count: 1 }, adjustment: { windowNumber: 10, atLeastCount: 4, deltaUnits: -1 }, next: { windowNumber: 10, count: 3 } },
    { name: 'atLeastCount below the stored count leaves it alone (never lowers)', state: { windowNumber: 10, count: 5 }, adjustment: { windowNumber: 10, atLeastCount: 2, deltaUnits: 1 }, next: { windowNumber: 10, count: 6 } },
    { name: 'a delta of 0 with no raise writes nothing', state: { windowNumber: 10, count: 3 }, adjustment: { windowNumber: 10, atLeastCount: 3, deltaUnits: 0 }, next: null },
    { name: 'a delta of 0 with no raise on an empty store writes nothing', state: null, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: 0 }, next: null },
    { name: 'a raise and a refund that cancel out write nothing', state: { windowNumber: 10, count: 2 }, adjustment: { windowNumber: 10, atLeastCount: 3, deltaUnits: -1 }, next: null },
    { name: 'an adjustment for a window that has passed is dropped', state: { windowNumber: 10, count: 4 }, adjustment: { windowNumber: 9, atLeastCount: 9, deltaUnits: 5 }, next: null },
    { name: 'an adjustment for a passed window is dropped even on an empty store', state: null, adjustment: { windowNumber: 9, atLeastCount: 3, deltaUnits: 1 }, next: null },
    { name: 'an adjustment for a window not yet begun is dropped', state: { windowNumber: 10, count: 1 }, adjustment: { windowNumber: 11, atLeastCount: 0, deltaUnits: 1 }, next: null },
    { name: 'a stored count from an older window does not count: the current window starts from 0', state: { windowNumber: 7, count: 5 }, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: 2 }, next: { windowNumber: 10, count: 2 } },
    { name: 'a refund against an older stored window writes nothing (the current window is already 0)', state: { windowNumber: 7, count: 5 }, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: -1 }, next: null },
    { name: 'a clock behind the stored window adjusts the stored window', state: { windowNumber: 12, count: 4 }, adjustment: { windowNumber: 12, atLeastCount: 0, deltaUnits: -2 }, next: { windowNumber: 12, count: 2 } },
    { name: 'a clock behind the stored window drops an adjustment for its own older window', state: { windowNumber: 12, count: 4 }, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: -2 }, next: null },
    { name: 'the first millisecond of a window belongs to it', state: null, nowMs: 11 * W, adjustment: { windowNumber: 11, atLeastCount: 1, deltaUnits: 0 }, next: { windowNumber: 11, count: 1 } },
    { name: 'the last millisecond of a window still belongs to it', state: { windowNumber: 10, count: 1 }, nowMs: 11 * W - 1, adjustment: { windowNumber: 10, atLeastCount: 0, deltaUnits: 1 }, next: { windowNumber: 10, count: 2 } },
  ])('$name', ({ state, nowMs, adjustment, next }) => {
    expect(adjustFixedWindow(state, nowMs ?? NOW, policy, adjustment)).toEqual(next);
  });

  it('never mutates the state it is given', () => {
    const state = Object.freeze({ windowNumber: 10, count: 4 });
    expect(adjustFixedWindow(state, NOW, policy, { windowNumber: 10, atLeastCount: 6, deltaUnits: -1 })).toEqual({ windowNumber: 10, count: 5 });
    expect(state).toEqual({ windowNumber: 10, count: 4 });
  });
});

describe('assertValidAdjustment', () => {
  it.each<WindowAdjustment>([
    { windowNumber: 0, atLeastCount: 0, deltaUnits: 0 },
    { windowNumber: 28_333_333, atLeastCount: 7, deltaUnits: -7 },
    { windowNumber: Number.MAX_SAFE_INTEGER, atLeastCount: Number.MAX_SAFE_INTEGER, deltaUnits: Number.MIN_SAFE_INTEGER },
  ])('accepts %o', (adjustment) => {
    expect(() => assertValidAdjustment(adjustment)).not.toThrow();
  });

  it.each<{ name: string; adjustment: WindowAdjustment; message: string }>([
    { name: 'a negative window number', adjustment: { windowNumber: -1, atLeastCount: 0, deltaUnits: 0 }, message: 'adjustment windowNumber must be a non-negative integer, got -1' },
    { name: 'a fractional window number', adjustment: { windowNumber: 1.5, atLeastCount: 0, deltaUnits: 0 }, message: 'adjustment windowNumber must be a non-negative integer, got 1.5' },
    { name: 'a NaN window number', adjustment: { windowNumber: Number.NaN, atLeastCount: 0, deltaUnits: 0 }, message: 'adjustment windowNumber must be a non-negative integer, got NaN' },
    { name: 'a negative atLeastCount', adjustment: { windowNumber: 1, atLeastCount: -1, deltaUnits: 0 }, message: 'adjustment atLeastCount must be a non-negative integer, got -1' },
    { name: 'an infinite atLeastCount', adjustment: { windowNumber: 1, atLeastCount: Number.POSITIVE_INFINITY, deltaUnits: 0 }, message: 'adjustment atLeastCount must be a non-negative integer, got Infinity' },
    { name: 'a fractional delta', adjustment: { windowNumber: 1, atLeastCount: 0, deltaUnits: -0.5 }, message: 'adjustment deltaUnits must be an integer, got -0.5' },
    { name: 'a delta beyond the safe integers', adjustment: { windowNumber: 1, atLeastCount: 0, deltaUnits: 2 ** 53 }, message: `adjustment deltaUnits must be an integer, got ${2 ** 53}` },
  ])('refuses $name with a RangeError naming the field', ({ adjustment, message }) => {
    expect(() => assertValidAdjustment(adjustment)).toThrow(new RangeError(message));
    expect(() => assertValidAdjustment(adjustment)).toThrow(RangeError);
  });
});

// ---- properties ------------------------------------------------------------

const windowMsArb = fc.integer({ min: 1_000, max: 120_000 });
const stateArb = fc.option(fc.record({ windowNumber: fc.integer({ min: 0, max: 1_000 }), count: fc.integer({ min: 0, max: 100 }) }), { nil: null });
const adjustmentArb = (windowNumber: fc.Arbitrary<number>) =>
  fc.record({ windowNumber, atLeastCount: fc.integer({ min: 0, max: 100 }), deltaUnits: fc.integer({ min: -100, max: 100 }) });

/** The window a store counts against at nowMs: its own, or the stored one when that is newer. */
function countedWindow(state: FixedWindowState | null, nowMs: number, windowMs: number): number {
  return Math.max(windowNumberAt(nowMs, windowMs), state?.windowNumber ?? 0);
}

describe('adjustFixedWindow: properties', () => {
  it('never touches a window that has passed (or any window but the one counted now)', () => {
    fc.assert(
      fc.property(windowMsArb, stateArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), adjustmentArb(fc.integer({ min: 0, max: 1_100 })), (windowMs, state, nowMs, adjustment) => {
        fc.pre(adjustment.windowNumber !== countedWindow(state, nowMs, windowMs));
        expect(adjustFixedWindow(state, nowMs, { windowMs }, adjustment)).toBeNull();
      }),
    );
  });

  it('an adjustment for an earlier window than the current one is always dropped', () => {
    fc.assert(
      fc.property(windowMsArb, stateArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), fc.integer({ min: 1, max: 50 }), adjustmentArb(fc.constant(0)), (windowMs, state, nowMs, back, raw) => {
        const windowNumber = countedWindow(state, nowMs, windowMs) - back;
        fc.pre(windowNumber >= 0);
        expect(adjustFixedWindow(state, nowMs, { windowMs }, { ...raw, windowNumber })).toBeNull();
      }),
    );
  });

  it('the count never goes below 0, and a write is always to the counted window', () => {
    fc.assert(
      fc.property(windowMsArb, stateArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), adjustmentArb(fc.constant(0)), (windowMs, state, nowMs, raw) => {
        const windowNumber = countedWindow(state, nowMs, windowMs);
        const next = adjustFixedWindow(state, nowMs, { windowMs }, { ...raw, windowNumber });
        if (next !== null) {
          expect(next.count).toBeGreaterThanOrEqual(0);
          expect(next.windowNumber).toBe(windowNumber);
        }
      }),
    );
  });

  it('the result is max(0, max(spent, atLeastCount) + delta), written only when it differs from what was spent', () => {
    fc.assert(
      fc.property(windowMsArb, stateArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), adjustmentArb(fc.constant(0)), (windowMs, state, nowMs, raw) => {
        const windowNumber = countedWindow(state, nowMs, windowMs);
        const spent = state !== null && state.windowNumber === windowNumber ? state.count : 0;
        const expected = Math.max(0, Math.max(spent, raw.atLeastCount) + raw.deltaUnits);
        const next = adjustFixedWindow(state, nowMs, { windowMs }, { ...raw, windowNumber });
        expect(next).toEqual(expected === spent ? null : { windowNumber, count: expected });
      }),
    );
  });

  it('atLeastCount restores a store that restarted empty: with delta 0 the count is exactly atLeastCount', () => {
    fc.assert(
      fc.property(windowMsArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), fc.integer({ min: 1, max: 1_000 }), (windowMs, nowMs, atLeastCount) => {
        const windowNumber = windowNumberAt(nowMs, windowMs);
        expect(adjustFixedWindow(null, nowMs, { windowMs }, { windowNumber, atLeastCount, deltaUnits: 0 })).toEqual({ windowNumber, count: atLeastCount });
      }),
    );
  });

  it('a store that restarted empty ends where the one that kept its state ends', () => {
    fc.assert(
      fc.property(windowMsArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: -100, max: 100 }), (windowMs, nowMs, known, deltaUnits) => {
        const windowNumber = windowNumberAt(nowMs, windowMs);
        const adjustment = { windowNumber, atLeastCount: known, deltaUnits };
        const kept = adjustFixedWindow({ windowNumber, count: known }, nowMs, { windowMs }, adjustment) ?? { windowNumber, count: known };
        const restarted = adjustFixedWindow(null, nowMs, { windowMs }, adjustment) ?? { windowNumber, count: 0 };
        expect(restarted).toEqual(kept);
      }),
    );
  });

  it('a delta of 0 with no raise (atLeastCount <= spent) writes nothing', () => {
    fc.assert(
      fc.property(windowMsArb, stateArb, fc.integer({ min: 0, max: 1_000 * 120_000 }), fc.nat(100), (windowMs, state, nowMs, below) => {
        const windowNumber = countedWindow(state, nowMs, windowMs);
        const spent = state !== null && state.windowNumber === windowNumber ? state.count : 0;
        const atLeastCount = Math.max(0, spent - below);
        expect(adjustFixedWindow(state, nowMs, { windowMs }, { windowNumber, atLeastCount, deltaUnits: 0 })).toBeNull();
      }),
    );
  });
});
