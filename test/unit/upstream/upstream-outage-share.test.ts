import fc from 'fast-check';
import { DAY_MS, resolveUpstreamPolicy, type UpstreamPolicy } from '../../../src/library/schedule/upstream-policy';
import { upstreamOutagePolicy } from '../../../src/library/schedule/upstream-outage-share';
import { scheduleUpstream } from '../../../src/library/schedule/upstream-schedule';
import type { UpstreamState } from '../../../src/library/schedule/upstream-state';
import { fcNumRuns } from '../../support/fc-num-runs';

const T0 = Date.UTC(2026, 11, 1, 12);
const today = Math.floor(T0 / DAY_MS);
const seen = (count: number, day = today): UpstreamState => ({ cursorMs: T0, cursorRem: 0, day, count, reservations: [] });
const budgeted = resolveUpstreamPolicy({ limit: 10, windowMs: 1000, headroom: 0.9, dailyBudget: 100 });

describe('upstreamOutagePolicy: one instance\'s share of the upstream quota during an outage', () => {
  it.each([
    ['one instance: the policy itself', 1, null, budgeted],
    ['fewer than one (no estimate yet): the policy itself', 0, null, budgeted],
    ['four: a quarter of the headroom and of the day', 4, null, { ...budgeted, headroomBp: 2250, dailyBudget: 25 }],
    ['four, 60 spent today: a quarter of the 40 left, on top of the 60', 4, seen(60), { ...budgeted, headroomBp: 2250, dailyBudget: 70 }],
    ['four, 60 spent yesterday: today is whole', 4, seen(60, today - 1), { ...budgeted, headroomBp: 2250, dailyBudget: 25 }],
    ['fifty, 98 spent: at least one call while any is left', 50, seen(98), { ...budgeted, headroomBp: 180, dailyBudget: 99 }],
    ['four, the day spent: nothing more', 4, seen(100), { ...budgeted, headroomBp: 2250, dailyBudget: 100 }],
    ['four, more than the day spent (a budget lowered since): nothing more', 4, seen(140), { ...budgeted, headroomBp: 2250, dailyBudget: 100 }],
    ['20 000: headroom never below one basis point', 20_000, null, { ...budgeted, headroomBp: 1, dailyBudget: 1 }],
  ] as const)('%s', (_, instances, state, expected) => {
    expect(upstreamOutagePolicy(budgeted, instances, state, T0)).toEqual(expected);
  });

  it.each([1, 0])('%i instances: the very policy object, not a copy', (instances) => {
    expect(upstreamOutagePolicy(budgeted, instances, seen(60), T0)).toBe(budgeted);
  });

  it('no daily budget stays none', () => {
    const policy = resolveUpstreamPolicy({ limit: 10, windowMs: 1000 });
    expect(upstreamOutagePolicy(policy, 3, null, T0)).toEqual({ ...policy, headroomBp: 3000 });
  });

  it('n instances each scheduling alone on their share run, together, at most the shared rate plus one call each', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 12 }), fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1000, max: 20_000 }), (instances, limit, durationMs) => {
        const policy: UpstreamPolicy = resolveUpstreamPolicy({ limit, windowMs: 1000, headroom: 1, maxWaitMs: 0, graceMs: 0 });
        const share = upstreamOutagePolicy(policy, instances, null, T0);
        let total = 0;
        for (let i = 0; i < instances; i++) {
          let state: UpstreamState | null = null;
          // Every ms a caller asks: the cursor alone decides.
          for (let t = 0; t < durationMs; t += 1) {
            const decided = scheduleUpstream(state, T0 + t, `h${i}:${t}`, share);
            if (decided.outcome.status === 'run') total++;
            if (decided.next !== null) state = decided.next;
          }
        }
        return total <= Math.ceil((limit * durationMs) / 1000) + instances;
      }),
      { numRuns: fcNumRuns(30) },
    );
  });
});
