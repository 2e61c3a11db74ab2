import fc from 'fast-check';
import type { UpstreamPolicy } from '../../../src/library/schedule/upstream-policy';
import { scheduleUpstream, type UpstreamOutcome } from '../../../src/library/schedule/upstream-schedule';
import type { UpstreamState } from '../../../src/library/schedule/upstream-state';
import { viewDecides } from '../../../src/library/schedule/upstream-view';
import { fcNumRuns } from '../../support/fc-num-runs';

// What a view cut short (the Redis store's first reservations only) may
// answer without the store: exactly the no-write answers the whole state
// would give. Time is injected.

const T0 = 1_700_000_000_000;
const HOLDERS = ['h0h0h0h0h0h0h0h0', 'h1h1h1h1h1h1h1h1', 'h2h2h2h2h2h2h2h2', 'h3h3h3h3h3h3h3h3'];
/** A slot every 100 ms, 50 ms of grace: 150 ms apart once queued. */
const POLICY: UpstreamPolicy = { limit: 10, windowMs: 1000, headroomBp: 10_000, maxWaitMs: 5_000, dailyBudget: 0, graceMs: 50, maxReservations: 20, maxReservationsPerHolder: 6 };

/** Holders 0..3 in turn queue `n` reservations at T0 (the first call runs). */
function queued(n: number, policy = POLICY): UpstreamState {
  let state: UpstreamState | null = null;
  for (let i = 0; i <= n; i++) state = scheduleUpstream(state, T0, HOLDERS[i % HOLDERS.length] as string, policy).next ?? state;
  return state as UpstreamState;
}

function cut(state: UpstreamState, listed: number): UpstreamState {
  return { ...state, reservations: state.reservations.slice(0, listed), omitted: state.reservations.length - listed };
}

const rejected = (reason: 'max_wait' | 'reservations_full'): UpstreamOutcome => ({ status: 'rejected', reason, retryAfterMs: 1 });

describe('viewDecides', () => {
  const full = queued(8);
  const view = cut(full, 3);
  const lastListedMs = (view.reservations[2] as { slotAtMs: number }).slotAtMs;
  test.each([
    ['a state not cut short decides anything', full, T0 + 10_000, null, rejected('reservations_full'), true],
    ['no state decides anything', null, T0, null, rejected('max_wait'), true],
    ['a view decides a call at its last listed slot', view, lastListedMs, null, rejected('max_wait'), true],
    ['a view does not decide a call after its last listed slot: an omitted one may be due', view, lastListedMs + 1, null, rejected('max_wait'), false],
    ['a view does not decide a call echoing a slot after its last listed one', view, T0, lastListedMs + 150, rejected('max_wait'), false],
    ['a view decides a call echoing a listed slot', view, T0, lastListedMs, rejected('max_wait'), true],
    ['a view never decides reservations_full: a holder at its share among the omitted is told token_reservations_full', view, T0, null, rejected('reservations_full'), false],
    ['a view listing nothing decides nothing', { ...full, reservations: [], omitted: 8 }, T0, null, rejected('max_wait'), false],
  ] as const)('%s', (_name, state, nowMs, claim, outcome, decides) => {
    expect(viewDecides(state, nowMs, claim, outcome)).toBe(decides);
  });

  // The state is queued under POLICY and decided under a policy the operator may have changed since
  // (a smaller queue, a longer grace, a shorter wait, a budget), as a restart with new config does: then reservations may exceed
  // the cap, and an omitted one may be due while no listed one has lapsed.
  test('property: whatever a view decides without writing is what the whole state answers, and the whole state writes nothing either', () => {
    const policyArb = fc
      .record({ maxReservations: fc.integer({ min: 1, max: 20 }), perHolder: fc.integer({ min: 1, max: 6 }), graceMs: fc.constantFrom(50, 2000), maxWaitMs: fc.integer({ min: 0, max: 5000 }), dailyBudget: fc.constantFrom(0, 3) })
      .map(({ perHolder, ...p }) => ({ ...POLICY, ...p, maxReservationsPerHolder: Math.min(perHolder, p.maxReservations) }));
    const callArb = fc.record({ holder: fc.nat(HOLDERS.length - 1), atMs: fc.integer({ min: -200, max: 4_000 }), echo: fc.option(fc.nat(19), { nil: undefined }), lateMs: fc.integer({ min: -3000, max: 60 }) });
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 20 }), fc.integer({ min: 1, max: 19 }), policyArb, fc.array(callArb, { minLength: 1, maxLength: 20 }), (n, listedWanted, policy, calls) => {
        const whole = queued(n);
        const listed = Math.min(listedWanted, whole.reservations.length - 1);
        const view = cut(whole, listed);
        for (const call of calls) {
          const holder = HOLDERS[call.holder] as string;
          const echoed = call.echo === undefined ? undefined : whole.reservations[call.echo % whole.reservations.length];
          const claim = echoed === undefined ? null : echoed.slotAtMs;
          const nowMs = echoed === undefined ? T0 + call.atMs : echoed.slotAtMs + call.lateMs;
          const onView = scheduleUpstream(view, nowMs, holder, policy, claim);
          if (onView.next !== null || !viewDecides(view, nowMs, claim, onView.outcome)) continue;
          const onWhole = scheduleUpstream(whole, nowMs, holder, policy, claim);
          expect({ nowMs, holder, claim, outcome: onView.outcome, writes: onWhole.next !== null }).toEqual({ nowMs, holder, claim, outcome: onWhole.outcome, writes: false });
        }
      }),
      { numRuns: fcNumRuns(500) },
    );
  });
});
