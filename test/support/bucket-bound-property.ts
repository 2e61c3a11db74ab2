import fc from 'fast-check';
import type { Algorithm, LimitParams } from '../../src/library/window/algorithms';

const paramsArb: fc.Arbitrary<LimitParams> = fc.record({
  limit: fc.integer({ min: 1, max: 10 }),
  windowMs: fc.integer({ min: 1000, max: 10_000 }),
  burst: fc.integer({ min: 1, max: 12 }),
});
const callsArb = fc.array(fc.record({ gapMs: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 2000 })), cost: fc.integer({ min: 0, max: 6 }) }), {
  maxLength: 80,
});

/**
 * The promise both buckets make: the units admitted in every interval of
 * length t are at most burst + limit × t / windowMs (the boundary allowed).
 * Checked on integers (× windowMs), over random bursts of calls.
 */
export function assertBucketBound<S>(algorithm: Algorithm<S>): void {
  fc.assert(
    fc.property(paramsArb, fc.integer({ min: 0, max: 2_000_000_000_000 }), callsArb, (params, startMs, calls) => {
      let state: S | null = null;
      let nowMs = startMs;
      const log: { atMs: number; cost: number }[] = [];
      for (const call of calls) {
        nowMs += call.gapMs;
        const { decision, next } = algorithm.decide(state, nowMs, params, call.cost);
        if (decision.allowed && call.cost > 0) log.push({ atMs: nowMs, cost: call.cost });
        if (next !== null) state = next;
      }
      const burst = params.burst as number;
      for (let i = 0; i < log.length; i++) {
        let units = 0;
        for (let j = i; j < log.length; j++) {
          const a = log[i] as { atMs: number };
          const b = log[j] as { atMs: number; cost: number };
          units += b.cost;
          expect(units * params.windowMs).toBeLessThanOrEqual(burst * params.windowMs + params.limit * (b.atMs - a.atMs));
        }
      }
    }),
    { numRuns: 300 },
  );
}
