import fc from 'fast-check';
import { DAY_MS, intervalOf, type UpstreamPolicy } from '../../../src/library/schedule/upstream-policy';
import { scheduleUpstream, upstreamStateExpiresAtMs, type UpstreamOutcome } from '../../../src/library/schedule/upstream-schedule';
import type { UpstreamState } from '../../../src/library/schedule/upstream-state';
import { fcNumRuns } from '../../support/fc-num-runs';
import { UPSTREAM_VECTORS } from '../upstream-vectors';

describe('scheduleUpstream: table', () => {
  test.each(UPSTREAM_VECTORS.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    const result = scheduleUpstream(v.state, v.nowMs, v.holder, v.policy, v.claimSlotAtMs ?? null);
    expect(result.outcome).toEqual(v.outcome);
    expect(result.next).toEqual(v.next);
  });
});

describe('upstreamStateExpiresAtMs: table', () => {
  const P: UpstreamPolicy = { limit: 15, windowMs: 60_000, headroomBp: 9000, maxWaitMs: 60_000, dailyBudget: 0, graceMs: 1000, maxReservations: 100, maxReservationsPerHolder: 100 };
  const E = 1_700_000_000_123; // day 19 675, which ends at 1 700 006 400 000
  const idle = { cursorMs: E, cursorRem: 0, day: 19_675, count: 1, reservations: [] };
  test.each<[string, UpstreamState, UpstreamPolicy, number]>([
    ['the cursor, rounded up to a whole ms', { ...idle, cursorRem: 1 }, P, E + 1],
    ['the cursor itself when it is a whole ms', idle, P, E],
    ['one ms past the last reservation\'s grace', { ...idle, reservations: [{ holder: 'A', slotAtMs: E + 4445 }, { holder: 'B', slotAtMs: E + 9890 }] }, P, E + 10_891],
    ['the end of the counted day, with a daily budget and a count', idle, { ...P, dailyBudget: 5 }, 1_700_006_400_000],
    ['not the end of the day without a daily budget', idle, P, E],
    ['not the end of the day when nothing is counted', { ...idle, count: 0 }, { ...P, dailyBudget: 5 }, E],
  ])('%s', (_name, state, policy, expiresAtMs) => {
    expect(upstreamStateExpiresAtMs(state, policy)).toBe(expiresAtMs);
  });
});

// ---------------------------------------------------------------- properties

const HOLDERS = ['h0h0h0h0h0h0h0h0', 'h1h1h1h1h1h1h1h1', 'h2h2h2h2h2h2h2h2', 'h3h3h3h3h3h3h3h3', 'h4h4h4h4h4h4h4h4', 'h5h5h5h5h5h5h5h5'];

const policyArb: fc.Arbitrary<UpstreamPolicy> = fc
  .record({
    limit: fc.integer({ min: 1, max: 30 }),
    windowMs: fc.constantFrom(1000, 7000, 60_000),
    headroomBp: fc.constantFrom(10_000, 9000, 7777, 5000),
    maxWaitMs: fc.integer({ min: 0, max: 40_000 }),
    dailyBudget: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12 })),
    graceMs: fc.integer({ min: 0, max: 3000 }),
    maxReservations: fc.integer({ min: 1, max: 5 }),
    perHolder: fc.integer({ min: 1, max: 5 }),
  })
  .map(({ perHolder, ...p }) => ({ ...p, maxReservationsPerHolder: Math.min(perHolder, p.maxReservations) }));

/**
 * One call: a holder, and when. `back` returns to one of the holder's own
 * slots (`which` picks it, if it has any) `latenessMs` after it, which may be
 * early (negative) or past its grace, echoing that slot when `echo`;
 * otherwise the clock moves by `stepMs`, which may step back a little (an
 * instance whose clock is behind), and the call echoes nothing.
 */
const opArb = fc.record({
  holder: fc.integer({ min: 0, max: HOLDERS.length - 1 }),
  back: fc.boolean(),
  which: fc.nat(4),
  echo: fc.boolean(),
  latenessMs: fc.integer({ min: -500, max: 4000 }),
  stepMs: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 3000 }) }, { weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: -2000, max: -1 }) }, { weight: 1, arbitrary: fc.integer({ min: 3001, max: 90_000 }) }),
});

type Op = { holder: number; back: boolean; which: number; echo: boolean; latenessMs: number; stepMs: number };

interface Step {
  readonly nowMs: number;
  readonly holder: string;
  readonly before: UpstreamState | null;
  readonly outcome: UpstreamOutcome;
  readonly wrote: boolean;
  readonly next: UpstreamState | null;
  /** The slot the call echoed (one it was told), if any. */
  readonly echoedSlotAtMs: number | undefined;
  /** The holder's slots before the call, as the outcomes told them and not yet used. */
  readonly heldSlotsAtMs: readonly number[];
  /** The latest clock any earlier call had: one past a slot's grace may already have expired it. */
  readonly latestEarlierMs: number;
}

/** Folds the calls through scheduleUpstream, and what each holder was told, side by side. */
function run(policy: UpstreamPolicy, startMs: number, ops: readonly Op[]): { steps: Step[]; runs: { atMs: number; slotAtMs: number }[]; final: UpstreamState | null } {
  let state: UpstreamState | null = null;
  let clockMs = startMs;
  const told = new Map<string, number[]>();
  const steps: Step[] = [];
  const runs: { atMs: number; slotAtMs: number }[] = [];
  let latestMs = Number.NEGATIVE_INFINITY;
  for (const op of ops) {
    const holder = HOLDERS[op.holder] as string;
    const held = told.get(holder) ?? [];
    const back = op.back && held.length > 0 ? (held[op.which % held.length] as number) : undefined;
    const nowMs = back !== undefined ? Math.max(0, back + op.latenessMs) : (clockMs = Math.max(0, clockMs + op.stepMs));
    const echoed = back !== undefined && op.echo ? back : undefined;
    const { outcome, next } = scheduleUpstream(state, nowMs, holder, policy, echoed ?? null);
    steps.push({ nowMs, holder, before: state, outcome, wrote: next !== null, next, echoedSlotAtMs: echoed, heldSlotsAtMs: [...held], latestEarlierMs: latestMs });
    latestMs = Math.max(latestMs, nowMs);
    let kept = held;
    if (outcome.status === 'run') {
      runs.push({ atMs: nowMs, slotAtMs: outcome.claimed ? outcome.slotAtMs : nowMs });
      if (outcome.claimed) kept = held.filter((slot) => slot !== outcome.slotAtMs);
    } else if (outcome.status === 'reserved') {
      if (!held.includes(outcome.slotAtMs)) kept = [...held, outcome.slotAtMs];
    }
    // The holder's own call saw these lapse, and wrote it down (or the state had already dropped them).
    if (next !== null || outcome.status === 'rejected') kept = kept.filter((slot) => nowMs <= slot + policy.graceMs);
    told.set(holder, kept);
    if (next !== null) state = next;
  }
  return { steps, runs, final: state };
}

/**
 * A call that granted nothing wrote nothing, or only the drop of the reservations
 * that had lapsed by its clock: the same cursor and day, the claimable ones kept
 * in order; asked again at once, it writes nothing.
 */
function expectOnlyLapsesWritten(step: Step, policy: UpstreamPolicy): void {
  if (step.next === null) return;
  const before = step.before as UpstreamState; // an empty key has nothing to lapse
  const claimable = before.reservations.filter((r) => step.nowMs <= r.slotAtMs + policy.graceMs);
  expect(claimable.length).toBeLessThan(before.reservations.length);
  expect({ ...step.next, count: 0 }).toEqual({ ...before, count: 0, reservations: claimable });
  expect(scheduleUpstream(step.next, step.nowMs, step.holder, policy, step.echoedSlotAtMs ?? null).next).toBeNull();
}

const startArb = fc.oneof(fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.integer({ min: 1_700_006_400_000 - 60_000, max: 1_700_006_400_000 }));
const opsArb = fc.array(opArb, { minLength: 1, maxLength: 40 });

describe('scheduleUpstream: properties', () => {
  test('no two runs are closer than the interval after headroom, whatever the callers, their lateness and their clocks', () => {
    fc.assert(
      fc.property(policyArb, startArb, opsArb, (policy, startMs, ops) => {
        const { numerator, denominator } = intervalOf(policy);
        const times = run(policy, startMs, ops).runs.map((r) => r.atMs).sort((a, b) => a - b);
        for (let i = 1; i < times.length; i++) {
          // (b − a) ≥ numerator / denominator, on integers.
          const gapMs = (times[i] as number) - (times[i - 1] as number);
          expect({ gapMs, ok: gapMs * denominator >= numerator }).toEqual({ gapMs, ok: true });
        }
      }),
      { numRuns: fcNumRuns(1000) },
    );
  });

  test('a call that echoes its slot at or after it and within grace runs on exactly it, once; earlier it is told the same slot and nothing is written', () => {
    fc.assert(
      fc.property(policyArb, startArb, opsArb, (policy, startMs, ops) => {
        for (const step of run(policy, startMs, ops).steps) {
          const slot = step.echoedSlotAtMs;
          // Unless a call whose clock was already past the grace saw the reservation expire.
          if (slot === undefined || step.nowMs > slot + policy.graceMs || step.latestEarlierMs > slot + policy.graceMs) continue;
          if (step.nowMs >= slot) expect(step.outcome).toEqual({ status: 'run', claimed: true, slotAtMs: slot });
          else {
            expect(step.outcome).toEqual({ status: 'reserved', slotAtMs: slot, retryAfterMs: slot - step.nowMs });
            expectOnlyLapsesWritten(step, policy);
          }
        }
      }),
      { numRuns: fcNumRuns(1000) },
    );
  });

  test('a caller who holds nothing never runs on a claim, a claim is always one of its own slots, and a claimed slot is never claimed again', () => {
    fc.assert(
      fc.property(policyArb, startArb, opsArb, (policy, startMs, ops) => {
        for (const step of run(policy, startMs, ops).steps) {
          if (step.outcome.status === 'run' && step.outcome.claimed) expect(step.heldSlotsAtMs).toContain(step.outcome.slotAtMs);
        }
      }),
      { numRuns: fcNumRuns(500) },
    );
  });

  test('a rejection writes nothing but the lapses it saw, and the same call again writes nothing; reservations never pass the cap, nor a holder\'s its own', () => {
    fc.assert(
      fc.property(policyArb, startArb, opsArb, (policy, startMs, ops) => {
        const { steps, final } = run(policy, startMs, ops);
        for (const step of steps) if (step.outcome.status === 'rejected') expectOnlyLapsesWritten(step, policy);
        for (const step of [...steps.map((s) => s.before), final]) {
          const holders = step?.reservations.map((r) => r.holder) ?? [];
          expect(holders.length).toBeLessThanOrEqual(policy.maxReservations);
          for (const holder of new Set(holders)) expect(holders.filter((h) => h === holder).length).toBeLessThanOrEqual(policy.maxReservationsPerHolder);
          const slots = step?.reservations.map((r) => r.slotAtMs) ?? [];
          expect(new Set(slots).size).toBe(slots.length);
        }
      }),
      { numRuns: fcNumRuns(300) },
    );
  });

  test('runs per UTC day (of their slot) never pass the daily budget', () => {
    fc.assert(
      fc.property(policyArb, startArb, opsArb, (policy, startMs, ops) => {
        fc.pre(policy.dailyBudget > 0);
        const perDay = new Map<number, number>();
        for (const r of run(policy, startMs, ops).runs) {
          const day = Math.floor(r.slotAtMs / DAY_MS);
          perDay.set(day, (perDay.get(day) ?? 0) + 1);
        }
        for (const count of perDay.values()) expect(count).toBeLessThanOrEqual(policy.dailyBudget);
      }),
      { numRuns: fcNumRuns(1000) },
    );
  });

  test('a new caller rejected for the wait is still rejected for it 1 ms before retryAfterMs and not at it; one rejected for the budget is not at it', () => {
    fc.assert(
      fc.property(policyArb, startArb, opsArb, (policy, startMs, ops) => {
        for (const step of run(policy, startMs, ops).steps) {
          const { outcome } = step;
          if (outcome.status !== 'rejected' || outcome.reason === 'reservations_full' || outcome.reason === 'token_reservations_full' || step.heldSlotsAtMs.length > 0) continue;
          const again = (atMs: number) => scheduleUpstream(step.before, atMs, step.holder, policy).outcome;
          // The budget may come back sooner (an expired reservation gives its unit back): a bound, not exact.
          if (outcome.reason === 'max_wait') {
            const before = again(step.nowMs + outcome.retryAfterMs - 1);
            expect(before.status === 'rejected' && before.reason === outcome.reason).toBe(true);
          }
          const at = again(step.nowMs + outcome.retryAfterMs);
          expect(at.status === 'rejected' && at.reason === outcome.reason).toBe(false);
        }
      }),
      { numRuns: fcNumRuns(500) },
    );
  });

  test('from upstreamStateExpiresAtMs on, a state answers a new caller as no state does', () => {
    fc.assert(
      fc.property(policyArb, startArb, opsArb, fc.nat(100_000), (policy, startMs, ops, laterMs) => {
        const { final } = run(policy, startMs, ops);
        fc.pre(final !== null);
        const atMs = upstreamStateExpiresAtMs(final as UpstreamState, policy) + laterMs;
        expect(scheduleUpstream(final, atMs, 'newcomer-newcomer', policy).outcome).toEqual(scheduleUpstream(null, atMs, 'newcomer-newcomer', policy).outcome);
      }),
      { numRuns: fcNumRuns(500) },
    );
  });
});
