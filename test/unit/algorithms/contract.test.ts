import fc from 'fast-check';
import { ALGORITHMS, ALGORITHM_NAMES, algorithmNamed, assertValidLimitParams, isAlgorithmName, type Algorithm, type LimitParams } from '../../../src/library/window/algorithms';

// The promises every algorithm in the registry makes (algorithm.ts), checked
// over states reached by random histories of decisions and adjustments, with
// clocks that step backwards as well as forwards. Time is injected; no sleeps.

interface Op {
  readonly kind: 'decide' | 'adjust';
  readonly stepMs: number;
  readonly cost: number;
  readonly deltaUnits: number;
  /** Adjust only: merge with the state as it was this many ops ago (less spent than the truth). */
  readonly atLeastAgo: number;
}

const paramsArb: fc.Arbitrary<LimitParams> = fc
  .record({
    limit: fc.integer({ min: 1, max: 12 }),
    windowMs: fc.oneof(fc.constantFrom(1000, 2500, 7000, 60_000), fc.integer({ min: 1000, max: 20_000 })),
    burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
  })
  .map(({ burst, ...rest }) => (burst === undefined ? rest : { ...rest, burst }));

const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom('decide' as const, 'decide' as const, 'decide' as const, 'adjust' as const),
  stepMs: fc.oneof(fc.integer({ min: -3000, max: 3000 }), fc.integer({ min: 0, max: 500 }), fc.integer({ min: 0, max: 90_000 })),
  cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 6 })),
  deltaUnits: fc.integer({ min: -4, max: 4 }),
  atLeastAgo: fc.integer({ min: 0, max: 5 }),
});

const historyArb = fc.record({
  startMs: fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 1_000_000_000_000, max: 2_000_000_000_000 })),
  ops: fc.array(opArb, { maxLength: 25 }),
});

interface Reached<S> {
  readonly state: S | null;
  /** The time of the last op (may be behind the state). */
  readonly nowMs: number;
  /** The latest time any op ran at. */
  readonly maxMs: number;
}

/** Runs a history the way a store does: write `next` when non-null. */
function replay<S>(alg: Algorithm<S>, params: LimitParams, history: { startMs: number; ops: readonly Op[] }): Reached<S> {
  let state: S | null = null;
  const past: (S | null)[] = [];
  let nowMs = history.startMs;
  let maxMs = nowMs;
  for (const op of history.ops) {
    nowMs = Math.max(0, nowMs + op.stepMs);
    maxMs = Math.max(maxMs, nowMs);
    past.push(state);
    if (op.kind === 'decide') {
      const { next } = alg.decide(state, nowMs, params, op.cost);
      if (next !== null) state = next;
    } else {
      const atLeast = past[Math.max(0, past.length - 1 - op.atLeastAgo)] ?? null;
      const next = alg.adjust(state, nowMs, params, { atLeast, deltaUnits: op.deltaUnits });
      if (next !== null) state = next;
    }
  }
  return { state, nowMs, maxMs };
}

function remainingAt<S>(alg: Algorithm<S>, state: S | null, nowMs: number, params: LimitParams): number {
  return alg.decide(state, nowMs, params, 0).decision.remaining;
}

function probeTimes(fromMs: number, params: LimitParams): number[] {
  const w = params.windowMs;
  return [0, 1, Math.floor(w / 3), w - 1, w, w + Math.floor(w / 2), 2 * w, 3 * w].map((d) => fromMs + d);
}

const RUNS = { numRuns: Number(process.env.FC_RUNS ?? 200) };

function contract<S>(alg: Algorithm<S>): void {
  describe(`${alg.name}: the shared contract`, () => {
    test('a refusal writes nothing; cost 0 is allowed and writes nothing', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, fc.integer({ min: 0, max: 16 }), fc.integer({ min: -2000, max: 2000 }), (params, history, cost, lagMs) => {
          const { state, nowMs } = replay(alg, params, history);
          const at = Math.max(0, nowMs + lagMs);
          const result = alg.decide(state, at, params, cost);
          if (!result.decision.allowed) expect(result.next).toBeNull();
          if (cost === 0) {
            expect(result.decision.allowed).toBe(true);
            expect(result.next).toBeNull();
            expect(result.decision.retryAfterMs).toBe(0);
          }
          expect(result.decision.remaining).toBeGreaterThanOrEqual(0);
          expect(result.decision.remaining).toBeLessThanOrEqual(alg.maxCost(params));
          expect(result.decision.limit).toBe(alg.maxCost(params));
          expect(Number.isSafeInteger(result.decision.resetAtMs)).toBe(true);
          expect(Number.isSafeInteger(result.decision.retryAfterMs)).toBe(true);
        }),
        RUNS,
      );
    });

    test('retryAfterMs is exact: still refused 1 ms before, allowed at it', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, fc.integer({ min: 1, max: 15 }), fc.integer({ min: -2000, max: 2000 }), (params, history, rawCost, lagMs) => {
          const cost = Math.min(rawCost, alg.maxCost(params));
          const { state, nowMs } = replay(alg, params, history);
          const at = Math.max(0, nowMs + lagMs);
          const { decision } = alg.decide(state, at, params, cost);
          if (decision.allowed) {
            expect(decision.retryAfterMs).toBe(0);
            return;
          }
          expect(decision.retryAfterMs).toBeGreaterThanOrEqual(1);
          expect(alg.decide(state, at + decision.retryAfterMs - 1, params, cost).decision.allowed).toBe(false);
          expect(alg.decide(state, at + decision.retryAfterMs, params, cost).decision.allowed).toBe(true);
        }),
        RUNS,
      );
    });

    test('a cost above maxCost is refused, writes nothing, and hints a retry of at least 1 ms', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, fc.integer({ min: 1, max: 10 }), (params, history, over) => {
          const { state, nowMs } = replay(alg, params, history);
          const result = alg.decide(state, nowMs, params, alg.maxCost(params) + over);
          expect(result.decision.allowed).toBe(false);
          expect(result.next).toBeNull();
          expect(result.decision.retryAfterMs).toBeGreaterThanOrEqual(1);
        }),
        RUNS,
      );
    });

    test('a clock that is behind never gets more than the in-order clock would', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, fc.integer({ min: 0, max: 15 }), fc.integer({ min: 1, max: 100_000 }), (params, history, cost, lagMs) => {
          const { state, maxMs } = replay(alg, params, history);
          const behind = alg.decide(state, Math.max(0, maxMs - lagMs), params, cost).decision;
          const inOrder = alg.decide(state, maxMs, params, cost).decision;
          if (behind.allowed) expect(inOrder.allowed).toBe(true);
          if (behind.allowed === inOrder.allowed) expect(behind.remaining).toBeLessThanOrEqual(inOrder.remaining);
          if (!behind.allowed && !inOrder.allowed && cost <= alg.maxCost(params)) {
            // Told to come back no earlier, in absolute time.
            expect(Math.max(0, maxMs - lagMs) + behind.retryAfterMs).toBeGreaterThanOrEqual(maxMs + inOrder.retryAfterMs);
          }
        }),
        RUNS,
      );
    });

    test('adjust with deltaUnits = -cost right after an allowed decision restores the capacity', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, fc.integer({ min: 1, max: 15 }), fc.integer({ min: 0, max: 15 }), (params, history, cost, laterCost) => {
          const { state, nowMs } = replay(alg, params, history);
          const spent = alg.decide(state, nowMs, params, cost);
          fc.pre(spent.decision.allowed);
          const restored = alg.adjust(spent.next, nowMs, params, { atLeast: null, deltaUnits: -cost });
          expect(restored).not.toBeNull();
          for (const at of probeTimes(nowMs, params)) {
            expect(alg.decide(restored, at, params, laterCost).decision).toEqual(alg.decide(state, at, params, laterCost).decision);
          }
        }),
        RUNS,
      );
    });

    test('adjust with atLeast = a more spent state is never less spent than either afterwards', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, historyArb, fc.integer({ min: 0, max: 4 }), (params, ours, theirs, deltaUnits) => {
          const own = replay(alg, params, ours);
          const known = replay(alg, params, theirs);
          const nowMs = own.nowMs;
          const adjusted = alg.adjust(own.state, nowMs, params, { atLeast: known.state, deltaUnits });
          const after = adjusted ?? own.state;
          // Compared from the latest time anyone has seen: that is where the merge stands.
          for (const at of probeTimes(Math.max(own.maxMs, known.maxMs), params)) {
            const remaining = remainingAt(alg, after, at, params);
            expect(remaining).toBeLessThanOrEqual(remainingAt(alg, own.state, at, params));
            expect(remaining).toBeLessThanOrEqual(remainingAt(alg, known.state, at, params));
          }
        }),
        RUNS,
      );
    });

    test('adjust returns null exactly when nothing would change, and a refund never goes below empty', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 15 }), (params, history, refund, cost) => {
          const { state, nowMs } = replay(alg, params, history);
          const refunded = alg.adjust(state, nowMs, params, { atLeast: null, deltaUnits: -refund });
          const after = refunded ?? state;
          for (const at of probeTimes(nowMs, params)) {
            expect(remainingAt(alg, after, at, params)).toBeGreaterThanOrEqual(remainingAt(alg, state, at, params));
            expect(remainingAt(alg, after, at, params)).toBeLessThanOrEqual(alg.maxCost(params));
          }
          // Refunding everything there could be leaves the same answers as an empty key.
          const emptied = alg.adjust(state, nowMs, params, { atLeast: null, deltaUnits: -1_000_000 }) ?? state;
          for (const at of probeTimes(Math.max(nowMs, 0), params)) {
            expect(alg.decide(emptied, at, params, cost).decision.allowed).toBe(alg.decide(null, at, params, cost).decision.allowed);
          }
          expect(alg.adjust(state, nowMs, params, { atLeast: null, deltaUnits: 0 })).toBeNull();
          expect(alg.adjust(null, nowMs, params, { atLeast: null, deltaUnits: -refund })).toBeNull();
        }),
        RUNS,
      );
    });

    test('at and after expiresAtMs a stored state answers exactly like an empty key', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 200_000 }), (params, history, cost, afterMs) => {
          const { state } = replay(alg, params, history);
          fc.pre(state !== null);
          const at = alg.expiresAtMs(state as S, params) + afterMs;
          expect(alg.decide(state, at, params, cost)).toEqual(alg.decide(null, at, params, cost));
        }),
        RUNS,
      );
    });

    test('parseState reads back every state it wrote (through JSON) and turns junk into null', () => {
      fc.assert(
        fc.property(paramsArb, historyArb, fc.anything(), (params, history, junk) => {
          const { state } = replay(alg, params, history);
          if (state !== null) expect(alg.parseState(JSON.parse(JSON.stringify(state)))).toEqual(state);
          const parsed = alg.parseState(junk);
          if (parsed !== null) {
            // Whatever junk passes is a shape decide can work with.
            const { decision } = alg.decide(parsed, 1_700_000_000_000, params, 1);
            expect(Number.isFinite(decision.remaining)).toBe(true);
          }
        }),
        RUNS,
      );
      for (const junk of [null, undefined, 7, 'x', [], {}, { count: -1 }, { entries: 'no' }, { tatMs: 1.5, tatRemainder: 0 }]) {
        expect(alg.parseState(junk)).toBeNull();
      }
    });

    test('describe says something plain', () => {
      const words = alg.describe({ limit: 120, windowMs: 60_000, burst: 10 });
      expect(words).toMatch(/\d/);
      expect(words.length).toBeLessThan(120);
    });
  });
}

// Algorithm<S> is assignable to Algorithm<unknown> (method parameters are bivariant); the contract needs no more.
for (const name of ALGORITHM_NAMES) contract<unknown>(ALGORITHMS[name]);

describe('the registry', () => {
  test('holds every name, each under its own name', () => {
    expect(Object.keys(ALGORITHMS).sort()).toEqual([...ALGORITHM_NAMES].sort());
    for (const name of ALGORITHM_NAMES) expect(algorithmNamed(name).name).toBe(name);
  });

  test('an unknown name is refused with the choices, never defaulted', () => {
    expect(isAlgorithmName('token-bucket')).toBe(true);
    expect(isAlgorithmName('toString')).toBe(false);
    expect(() => algorithmNamed('leaky')).toThrow(/unknown rate-limit algorithm "leaky"; choose one of fixed-window, sliding-window/);
  });

  test('describe, for integrators', () => {
    const p = { limit: 120, windowMs: 60_000 };
    expect(ALGORITHMS['fixed-window'].describe(p)).toBe('at most 120 in each minute window (windows start on the clock)');
    expect(ALGORITHMS['sliding-log'].describe(p)).toBe('at most 120 in any minute');
    expect(ALGORITHMS['sliding-window'].describe({ limit: 1000, windowMs: 86_400_000 })).toBe('about 1000 in any 24 hours (a weighted estimate; at most 1000 in each clock 24 hours)');
    expect(ALGORITHMS['token-bucket'].describe({ limit: 2, windowMs: 1000, burst: 10 })).toBe('bursts of up to 10, then one call every 0.5 s');
    expect(ALGORITHMS['leaky-bucket'].describe({ limit: 7, windowMs: 60_000, burst: 1 })).toBe('one call every 8.571 s, no bursts');
    expect(ALGORITHMS['leaky-bucket'].describe({ limit: 120, windowMs: 60_000 })).toBe('one call every 0.5 s, with bursts of up to 120');
  });

  test('params that would overflow the exact arithmetic are refused', () => {
    expect(() => assertValidLimitParams({ limit: 120, windowMs: 60_000, burst: 10 })).not.toThrow();
    expect(() => assertValidLimitParams({ limit: 0, windowMs: 60_000 })).toThrow(/limit must be a positive integer/);
    expect(() => assertValidLimitParams({ limit: 1, windowMs: 1.5 })).toThrow(/windowMs/);
    expect(() => assertValidLimitParams({ limit: 1, windowMs: 1000, burst: 0 })).toThrow(/burst/);
    expect(() => assertValidLimitParams({ limit: 1e12, windowMs: 86_400_000 })).toThrow(/2\^51/);
  });
});

test('an algorithm chosen by a run-time name is usable without casts: parse, decide, write back', () => {
  const alg = algorithmNamed(String('token-bucket'));
  const params = { limit: 2, windowMs: 1000, burst: 2 };
  const first = alg.decide(alg.parseState(undefined), 0, params, 2);
  expect(first.decision.allowed).toBe(true);
  const stored = alg.parseState(JSON.parse(JSON.stringify(first.next)));
  expect(alg.decide(stored, 0, params, 1).decision).toEqual({ allowed: false, limit: 2, remaining: 0, resetAtMs: 1000, retryAfterMs: 500 });
});
