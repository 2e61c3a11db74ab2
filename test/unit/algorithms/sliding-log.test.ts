import fc from 'fast-check';
import { slidingLog, type LimitParams, type SlidingLogState } from '../../../src/library/window/algorithms';
import { ALGORITHM_VECTORS } from '../algorithm-vectors';

const vectors = ALGORITHM_VECTORS['sliding-log'];

describe('slidingLog: table', () => {
  test.each(vectors.decide.map((v) => [v.name, v] as const))('decide: %s', (_name, v) => {
    const result = slidingLog.decide(v.state, v.nowMs, v.params, v.cost);
    expect(result.decision).toEqual(v.expected);
    expect(result.next).toEqual(v.next);
  });
  test.each(vectors.adjust.map((v) => [v.name, v] as const))('adjust: %s', (_name, v) => {
    expect(slidingLog.adjust(v.state, v.nowMs, v.params, v.adjustment)).toEqual(v.next);
  });
  test('expiresAtMs is when the newest entry leaves', () => {
    expect(slidingLog.expiresAtMs({ entries: [[9500, 1], [9800, 2]] }, { limit: 3, windowMs: 1000 })).toBe(10_800);
  });
});

const paramsArb: fc.Arbitrary<LimitParams> = fc.record({ limit: fc.integer({ min: 1, max: 10 }), windowMs: fc.integer({ min: 1000, max: 10_000 }) });
const callsArb = fc.array(fc.record({ gapMs: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3000 })), cost: fc.integer({ min: 0, max: 11 }) }), { maxLength: 80 });

function admitted(params: LimitParams, startMs: number, calls: { gapMs: number; cost: number }[]): { atMs: number; cost: number }[] {
  let state: SlidingLogState | null = null;
  let nowMs = startMs;
  const out: { atMs: number; cost: number }[] = [];
  for (const call of calls) {
    nowMs += call.gapMs;
    const { decision, next } = slidingLog.decide(state, nowMs, params, call.cost);
    if (decision.allowed && call.cost > 0) out.push({ atMs: nowMs, cost: call.cost });
    if (next !== null) {
      state = next;
      // The state stays bounded by the limit.
      expect(next.entries.length).toBeLessThanOrEqual(params.limit);
    }
  }
  return out;
}

describe('slidingLog: its promise', () => {
  test('admitted units in every interval [t, t + windowMs) never exceed the limit', () => {
    fc.assert(
      fc.property(paramsArb, fc.integer({ min: 0, max: 2_000_000_000_000 }), callsArb, (params, startMs, calls) => {
        const log = admitted(params, startMs, calls);
        // The worst interval starts at an admission.
        for (const first of log) {
          const inside = log.filter((a) => a.atMs >= first.atMs && a.atMs < first.atMs + params.windowMs);
          expect(inside.reduce((sum, a) => sum + a.cost, 0)).toBeLessThanOrEqual(params.limit);
        }
      }),
      { numRuns: 300 },
    );
  });

  test('and it is not stingy: a call is refused only when the interval ending now is full', () => {
    fc.assert(
      fc.property(paramsArb, fc.integer({ min: 0, max: 2_000_000_000_000 }), callsArb, (params, startMs, calls) => {
        let state: SlidingLogState | null = null;
        let nowMs = startMs;
        const log: { atMs: number; cost: number }[] = [];
        for (const call of calls) {
          nowMs += call.gapMs;
          const { decision, next } = slidingLog.decide(state, nowMs, params, call.cost);
          const spent = log.filter((a) => a.atMs > nowMs - params.windowMs).reduce((sum, a) => sum + a.cost, 0);
          expect(decision.allowed).toBe(spent + call.cost <= params.limit);
          expect(decision.remaining).toBe(Math.max(0, params.limit - spent - (decision.allowed ? call.cost : 0)));
          if (decision.allowed && call.cost > 0) log.push({ atMs: nowMs, cost: call.cost });
          if (next !== null) state = next;
        }
      }),
      { numRuns: 300 },
    );
  });

  test('the state never holds more than limit entries, through decisions and adjustments alike', () => {
    const opArb = fc.record({ gapMs: fc.integer({ min: -500, max: 800 }), cost: fc.integer({ min: 0, max: 4 }), adjust: fc.boolean(), deltaUnits: fc.integer({ min: -3, max: 5 }) });
    fc.assert(
      fc.property(paramsArb, fc.array(opArb, { maxLength: 60 }), (params, ops) => {
        let state: SlidingLogState | null = null;
        let other: SlidingLogState | null = null;
        let nowMs = 1_000_000;
        for (const op of ops) {
          nowMs = Math.max(0, nowMs + op.gapMs);
          other = slidingLog.decide(other, nowMs + 7, params, 1).next ?? other;
          const next: SlidingLogState | null = op.adjust
            ? slidingLog.adjust(state, nowMs, params, { atLeast: other, deltaUnits: op.deltaUnits })
            : slidingLog.decide(state, nowMs, params, op.cost).next;
          if (next !== null) state = next;
          expect(state?.entries.length ?? 0).toBeLessThanOrEqual(params.limit);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('slidingLog.parseState', () => {
  test.each<[string, unknown, SlidingLogState | null]>([
    ['an empty log', { entries: [] }, { entries: [] }],
    ['ascending entries of whole units', { entries: [[0, 1], [5, 3]] }, { entries: [[0, 1], [5, 3]] }],
    ['extra fields are dropped', { entries: [[5, 1]], other: 1 }, { entries: [[5, 1]] }],
    ['entries that are not a list', { entries: { 0: [5, 1] } }, null],
    ['an entry that is not a pair', { entries: [[5, 1, 2]] }, null],
    ['an entry of one number', { entries: [[5]] }, null],
    ['an entry that is not a list', { entries: ['5,1'] }, null],
    ['a negative timestamp', { entries: [[-1, 1]] }, null],
    ['a fractional timestamp', { entries: [[1.5, 1]] }, null],
    ['zero units', { entries: [[5, 0]] }, null],
    ['fractional units', { entries: [[5, 1.5]] }, null],
    ['two entries at the same ms', { entries: [[5, 1], [5, 2]] }, null],
    ['entries out of order', { entries: [[6, 1], [5, 2]] }, null],
    ['a bad entry after good ones', { entries: [[1, 1], [2, 1], [3, 'x']] }, null],
    ['not an object', 'entries', null],
    ['null', null, null],
  ])('%s', (_name, value, expected) => {
    expect(slidingLog.parseState(value)).toEqual(expected);
  });

  test('a log of up to 100 000 entries is read; a longer one is junk (no limit allows that many)', () => {
    const entries = Array.from({ length: 100_000 }, (_, i) => [i, 1]);
    expect(slidingLog.parseState({ entries })?.entries).toHaveLength(100_000);
    expect(slidingLog.parseState({ entries: [...entries, [100_000, 1]] })).toBeNull();
  });
});
