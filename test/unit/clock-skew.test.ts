import fc from 'fast-check';
import { decideFixedWindow, windowNumberAt, type FixedWindowState } from '../../src/library/window/fixed-window';

/**
 * Instances never compare clocks directly, only window numbers through the
 * shared state (docs/clocks.md). These tests run two simulated instances with
 * skewed, drifting and jumping clocks against one shared state through the
 * same pure decision the stores run atomically.
 */

const W = 60_000;
const LIMIT = 5;
const policy = { limit: LIMIT, windowMs: W };

type Op =
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'jump'; readonly instance: 0 | 1; readonly ms: number }
  | { readonly kind: 'call'; readonly instance: 0 | 1; readonly cost: number };

const instanceArb = fc.constantFrom<0 | 1>(0, 1);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: W }) }) },
  // A clock that steps (NTP correction, VM migration), often backwards.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('jump' as const), instance: instanceArb, ms: fc.integer({ min: -2 * W, max: 2 * W }) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('call' as const), instance: instanceArb, cost: fc.integer({ min: 0, max: 3 }) }) },
);
const scenarioArb = fc.record({
  startMs: fc.integer({ min: 0, max: 1_000 * W }),
  skewsMs: fc.tuple(fc.integer({ min: -3 * W, max: 3 * W }), fc.integer({ min: -3 * W, max: 3 * W })),
  ops: fc.array(opArb, { maxLength: 200 }),
});

describe('clock skew between instances sharing one window state', () => {
  it('never allows more than the limit in any stored window, and the stored window never goes back', () => {
    fc.assert(
      fc.property(scenarioArb, ({ startMs, skewsMs, ops }) => {
        let trueMs = startMs;
        const skews = [...skewsMs];
        let state: FixedWindowState | null = null;
        const allowedByWindow = new Map<number, number>();
        for (const op of ops) {
          if (op.kind === 'advance') trueMs += op.ms;
          else if (op.kind === 'jump') skews[op.instance] = (skews[op.instance] ?? 0) + op.ms;
          else {
            const nowMs = trueMs + (skews[op.instance] ?? 0);
            const { decision, next } = decideFixedWindow(state, nowMs, policy, op.cost);
            if (next !== null) {
              if (state !== null) expect(next.windowNumber).toBeGreaterThanOrEqual(state.windowNumber);
              if (decision.allowed) allowedByWindow.set(next.windowNumber, (allowedByWindow.get(next.windowNumber) ?? 0) + op.cost);
              state = next;
            }
          }
        }
        for (const spent of allowedByWindow.values()) expect(spent).toBeLessThanOrEqual(LIMIT);
      }),
      { numRuns: 500 },
    );
  });

  it('a clock behind the stored window (lagging or jumped back) gets exactly the answer of a clock inside it: no fresh budget', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 0, max: LIMIT }),
        fc.integer({ min: 1, max: 100 * W }),
        fc.integer({ min: 0, max: W - 1 }),
        fc.integer({ min: 0, max: 3 }),
        (storedWindow, count, lagMs, offsetInWindowMs, cost) => {
          const state: FixedWindowState = { windowNumber: storedWindow, count };
          const inWindowMs = storedWindow * W + offsetInWindowMs;
          const behindMs = storedWindow * W - lagMs;
          const behind = decideFixedWindow(state, behindMs, policy, cost);
          const inside = decideFixedWindow(state, inWindowMs, policy, cost);
          expect(behind.next).toEqual(inside.next);
          expect(behind.decision.allowed).toBe(inside.decision.allowed);
          expect(behind.decision.remaining).toBe(inside.decision.remaining);
          expect(behind.decision.resetAtMs).toBe(inside.decision.resetAtMs);
        },
      ),
    );
  });

  it('never stores a window beyond the one the fastest clock has reached: total capacity is bounded by the fastest clock', () => {
    fc.assert(
      fc.property(scenarioArb, ({ startMs, skewsMs, ops }) => {
        let trueMs = startMs;
        const skews = [...skewsMs];
        let state: FixedWindowState | null = null;
        let fastestMs = Number.NEGATIVE_INFINITY;
        const windowsOpened = new Set<number>();
        let totalAllowed = 0;
        for (const op of ops) {
          if (op.kind === 'advance') trueMs += op.ms;
          else if (op.kind === 'jump') skews[op.instance] = (skews[op.instance] ?? 0) + op.ms;
          else {
            const nowMs = trueMs + (skews[op.instance] ?? 0);
            fastestMs = Math.max(fastestMs, nowMs);
            const { decision, next } = decideFixedWindow(state, nowMs, policy, op.cost);
            if (next !== null) {
              expect(next.windowNumber).toBeLessThanOrEqual(windowNumberAt(fastestMs, W));
              windowsOpened.add(next.windowNumber);
              state = next;
            }
            if (decision.allowed) totalAllowed += op.cost;
          }
        }
        expect(totalAllowed).toBeLessThanOrEqual(LIMIT * windowsOpened.size);
      }),
      { numRuns: 500 },
    );
  });

  describe('worked cases (W = 60 s, limit 5)', () => {
    it('ahead: an instance 10 s ahead opens the next window early; its budget is spent early, not doubled', () => {
      let state: FixedWindowState | null = null;
      const spend = (nowMs: number) => {
        const r = decideFixedWindow(state, nowMs, policy, 1);
        if (r.next !== null) state = r.next;
        return r.decision.allowed;
      };
      const allowedInWindow0 = Array.from({ length: 5 }, () => spend(30_000)).filter(Boolean).length;
      // True time 55 s; A reads 65 s and opens window 1.
      const aheadEarly = Array.from({ length: 5 }, () => spend(65_000)).filter(Boolean).length;
      // B (true clock, 56 s, own window 0) now counts against window 1, already spent.
      expect(spend(56_000)).toBe(false);
      // True window 1 begins with nothing left: window 1's budget went early.
      expect(spend(61_000)).toBe(false);
      expect([allowedInWindow0, aheadEarly]).toEqual([5, 5]);
      expect(state).toEqual({ windowNumber: 1, count: 5 });
    });

    it('behind: an instance 10 s behind counts against the newer window, and its reset is computed late by its skew', () => {
      let state: FixedWindowState | null = null;
      for (let i = 0; i < 5; i++) state = decideFixedWindow(state, 61_000, policy, 1).next ?? state; // A opens window 1 and spends it
      // True time 65 s; B reads 55 s (own window 0, whose budget is untouched) and still is refused.
      const { decision } = decideFixedWindow(state, 55_000, policy, 1);
      expect(decision).toMatchObject({ allowed: false, remaining: 0, resetAtMs: 120_000 });
      // Retry-After by B's clock is 65 s; the true wait is 55 s: late by the skew, never early.
      expect(decision.retryAfterMs).toBe(65_000);
    });

    it('backwards jump: a clock stepped back across a boundary keeps counting in the window it already opened', () => {
      let state: FixedWindowState | null = null;
      const allowed: boolean[] = [];
      for (const nowMs of [61_000, 61_000, 61_000, 50_000, 50_000, 50_000, 62_000]) {
        const r = decideFixedWindow(state, nowMs, policy, 1);
        allowed.push(r.decision.allowed);
        state = r.next ?? state;
      }
      expect(allowed).toEqual([true, true, true, true, true, false, false]);
    });
  });
});
