import fc from 'fast-check';
import { slidingWindow, type LimitParams, type SlidingWindowState } from '../../../src/library/window/algorithms';
import { ALGORITHM_VECTORS } from '../algorithm-vectors';

const vectors = ALGORITHM_VECTORS['sliding-window'];

describe('slidingWindow: table', () => {
  test.each(vectors.decide.map((v) => [v.name, v] as const))('decide: %s', (_name, v) => {
    const result = slidingWindow.decide(v.state, v.nowMs, v.params, v.cost);
    expect(result.decision).toEqual(v.expected);
    expect(result.next).toEqual(v.next);
  });
  test.each(vectors.adjust.map((v) => [v.name, v] as const))('adjust: %s', (_name, v) => {
    expect(slidingWindow.adjust(v.state, v.nowMs, v.params, v.adjustment)).toEqual(v.next);
  });
  test('expiresAtMs: the end of the next window while this one has spent anything', () => {
    const p = { limit: 10, windowMs: 1000 };
    expect(slidingWindow.expiresAtMs({ windowNumber: 5, count: 1, previousCount: 0 }, p)).toBe(7000);
    expect(slidingWindow.expiresAtMs({ windowNumber: 5, count: 0, previousCount: 4 }, p)).toBe(6000);
  });
  test('the worst case of the estimate: a full window that arrived at its very end, then its successor', () => {
    // 10 at 999 (end of window 0), then as many as allowed in window 1, probing every ms.
    const p = { limit: 10, windowMs: 1000 };
    let state: SlidingWindowState | null = slidingWindow.decide(null, 999, p, 10).next;
    let inInterval = 10;
    for (let nowMs = 1000; nowMs < 1999; nowMs++) {
      const { decision, next } = slidingWindow.decide(state, nowMs, p, 1);
      if (decision.allowed) inInterval += 1;
      if (next !== null) state = next;
    }
    // [999, 1999) held 10 + 9: under 2 × limit, as documented, and more than limit: not exact.
    expect(inInterval).toBe(19);
  });
});

const paramsArb: fc.Arbitrary<LimitParams> = fc.record({ limit: fc.integer({ min: 1, max: 10 }), windowMs: fc.integer({ min: 1000, max: 10_000 }) });
const callsArb = fc.array(fc.record({ gapMs: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 4000 })), cost: fc.integer({ min: 0, max: 11 }) }), { maxLength: 80 });

function admitted(params: LimitParams, startMs: number, calls: { gapMs: number; cost: number }[]): { atMs: number; cost: number }[] {
  let state: SlidingWindowState | null = null;
  let nowMs = startMs;
  const out: { atMs: number; cost: number }[] = [];
  for (const call of calls) {
    nowMs += call.gapMs;
    const { decision, next } = slidingWindow.decide(state, nowMs, params, call.cost);
    if (decision.allowed && call.cost > 0) out.push({ atMs: nowMs, cost: call.cost });
    if (next !== null) state = next;
  }
  return out;
}

function unitsIn(log: readonly { atMs: number; cost: number }[], fromMs: number, toMs: number): number {
  return log.filter((a) => a.atMs >= fromMs && a.atMs < toMs).reduce((sum, a) => sum + a.cost, 0);
}

describe('slidingWindow: its promise', () => {
  test('every clock window holds at most limit; an aligned pair, up to elapsed x, at most limit + previous × x / windowMs', () => {
    fc.assert(
      fc.property(paramsArb, fc.integer({ min: 0, max: 2_000_000_000_000 }), callsArb, (params, startMs, calls) => {
        const W = params.windowMs;
        const log = admitted(params, startMs, calls);
        for (const call of log) {
          const n = Math.floor(call.atMs / W);
          const elapsed = call.atMs - n * W;
          const previous = unitsIn(log, (n - 1) * W, n * W);
          const current = unitsIn(log, n * W, call.atMs + 1);
          expect(current).toBeLessThanOrEqual(params.limit);
          // (previous + current) × W ≤ limit × W + previous × elapsed, on integers
          expect((previous + current) * W).toBeLessThanOrEqual(params.limit * W + previous * elapsed);
        }
      }),
      { numRuns: 300 },
    );
  });

  test('any interval of windowMs holds fewer than 2 × limit', () => {
    fc.assert(
      fc.property(paramsArb, fc.integer({ min: 0, max: 2_000_000_000_000 }), callsArb, (params, startMs, calls) => {
        const log = admitted(params, startMs, calls);
        for (const first of log) expect(unitsIn(log, first.atMs, first.atMs + params.windowMs)).toBeLessThanOrEqual(2 * params.limit - 1);
      }),
      { numRuns: 300 },
    );
  });
});

describe('slidingWindow.parseState', () => {
  test.each<[string, unknown, SlidingWindowState | null]>([
    ['three whole numbers', { windowNumber: 7, count: 2, previousCount: 3 }, { windowNumber: 7, count: 2, previousCount: 3 }],
    ['zeros', { windowNumber: 0, count: 0, previousCount: 0 }, { windowNumber: 0, count: 0, previousCount: 0 }],
    ['extra fields are dropped', { windowNumber: 1, count: 1, previousCount: 1, x: 1 }, { windowNumber: 1, count: 1, previousCount: 1 }],
    ['a negative window', { windowNumber: -1, count: 0, previousCount: 0 }, null],
    ['a fractional count', { windowNumber: 1, count: 0.5, previousCount: 0 }, null],
    ['a negative previous count', { windowNumber: 1, count: 0, previousCount: -1 }, null],
    ['a missing previous count', { windowNumber: 1, count: 0 }, null],
    ['not an object', 3, null],
    ['null', null, null],
  ])('%s', (_name, value, expected) => {
    expect(slidingWindow.parseState(value)).toEqual(expected);
  });
});
