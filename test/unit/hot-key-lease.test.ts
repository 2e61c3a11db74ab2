import fc from 'fast-check';
import { decideFixedWindow, type FixedWindowState } from '../../src/library/window/fixed-window';
import { answerFromLease, canLease, instancesSeen, isHot, leaseFrom, leaseShare, meterTick, unitsToReturn, type Lease, type RateMeter } from '../../src/library/window/hot-key-lease';
import type { PolicySet } from '../../src/library/window/policy';

const WINDOW_MS = 1000;

describe('leaseShare', () => {
  it.each([
    // remaining, instances, k, max, share
    [1000, 10, 4, 100, 25],
    [1000, 1, 4, 100, 100],
    [40, 10, 4, 100, 1],
    [3, 1, 4, 100, 1],
    [0, 1, 4, 100, 0],
    [2, 1, 1, 100, 2],
  ])('with %i left over %i instances (k %i, max %i) takes %i', (remaining, instances, k, max, share) => {
    expect(leaseShare(remaining, instances, k, max)).toBe(share);
  });

  it('never takes more than remains, and shrinks as the limit nears', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 1000 }), (remaining, n, k, max) => {
        const share = leaseShare(remaining, n, k, max);
        expect(share).toBeGreaterThanOrEqual(1);
        expect(share).toBeLessThanOrEqual(Math.min(remaining, max));
        expect(leaseShare(Math.floor(remaining / 2), n, k, max)).toBeLessThanOrEqual(share);
      }),
    );
  });
});

describe('the rate meter', () => {
  it('turns a key hot at the rate in one second and cold after a quiet second', () => {
    let meter: RateMeter | undefined;
    for (let i = 0; i < 200; i++) meter = meterTick(meter, 5_000 + i);
    expect(isHot(meter!, 200)).toBe(true);
    meter = meterTick(meter, 6_100);
    expect(isHot(meter, 200)).toBe(true);
    meter = meterTick(meter, 8_100);
    expect(isHot(meter, 200)).toBe(false);
  });

  it('turns cold when a whole quiet second lies between the hot one and now', () => {
    let meter: RateMeter | undefined;
    for (let i = 0; i < 200; i++) meter = meterTick(meter, 5_000 + i);
    meter = meterTick(meter, 7_100);
    expect(meter).toEqual({ bucketStartMs: 7_000, count: 1, lastCount: 0 });
    expect(isHot(meter, 200)).toBe(false);
  });

  it('stays cold below the rate', () => {
    let meter: RateMeter | undefined;
    for (let i = 0; i < 199; i++) meter = meterTick(meter, 5_000 + i * 5);
    expect(isHot(meter!, 200)).toBe(false);
  });
});

describe('instancesSeen', () => {
  it.each([
    [100, 10, 1, 10],
    [10, 10, 3, 1],
    [5, 10, 3, 3],
    [0, 0, 2, 2],
  ])('count grew %i with %i ours (before %i): %i', (delta, own, previous, expected) => {
    expect(instancesSeen(delta, own, previous)).toBe(expected);
  });
});

describe('answering from a lease', () => {
  const lease = leaseFrom(5, [{ allowed: true, limit: 100, remaining: 50, resetAtMs: 2000, retryAfterMs: 0 }], [{ windowNumber: 1, count: 50 }]);
  it('spends from the lease and reports the shared remaining plus what it still holds', () => {
    const answer = answerFromLease(lease, 1500, 2);
    expect(answer?.lease.unitsLeft).toBe(3);
    expect(answer?.decisions[0]?.remaining).toBe(53);
  });
  it('answers nothing once the window ended or too little is held', () => {
    expect(answerFromLease(lease, 2000, 1)).toBeUndefined();
    expect(answerFromLease(lease, 1500, 6)).toBeUndefined();
    expect(unitsToReturn(lease, 2000)).toBe(0);
    expect(unitsToReturn(lease, 1999)).toBe(5);
  });
  it('answers with exactly as many units held as the cost, allowed, with no retry', () => {
    const answer = answerFromLease(lease, 1500, 5);
    expect(answer?.lease.unitsLeft).toBe(0);
    expect(answer?.decisions).toEqual([{ allowed: true, limit: 100, remaining: 50, resetAtMs: 2000, retryAfterMs: 0 }]);
  });
  it('a lease over several windows ends with the earliest', () => {
    const decisions = [
      { allowed: true, limit: 100, remaining: 50, resetAtMs: 60_000, retryAfterMs: 0 },
      { allowed: true, limit: 10, remaining: 5, resetAtMs: 2000, retryAfterMs: 0 },
    ];
    expect(leaseFrom(3, decisions, ['s1', 's2'])).toEqual({ unitsLeft: 3, expiresAtMs: 2000, decisions, states: ['s1', 's2'] });
  });
  it('leases a set only when every policy is a fixed window', () => {
    expect(canLease([{ name: 'a', limit: 1, windowMs: 1000 }, { name: 'b', limit: 1, windowMs: 60_000, algorithm: 'sliding-window' }] as PolicySet)).toBe(false);
  });
  it('takes no share of a count already past the limit', () => {
    expect(leaseShare(-1, 1, 4, 100)).toBe(0);
  });
  it('leases only fixed windows', () => {
    expect(canLease([{ name: 'a', limit: 1, windowMs: 1000 }, { name: 'b', limit: 1, windowMs: 60_000, algorithm: 'fixed-window' }] as PolicySet)).toBe(true);
    expect(canLease([{ name: 'a', limit: 1, windowMs: 1000, algorithm: 'token-bucket' }] as PolicySet)).toBe(false);
  });
});

/**
 * n instances on one fixed window, every step one of: a call (answered from its lease,
 * or a take of a fresh share from the shared count), a return of its unused units, an
 * expiry (the lease forgotten), a clock step. Admitted per window never exceeds the limit.
 */
describe('a fleet of leasing instances', () => {
  type Step = { kind: 'call' | 'return' | 'forget'; instance: number; cost: number } | { kind: 'tick'; ms: number };
  const step = (n: number): fc.Arbitrary<Step> =>
    fc.oneof(
      { weight: 8, arbitrary: fc.record({ kind: fc.constant('call' as const), instance: fc.integer({ min: 0, max: n - 1 }), cost: fc.integer({ min: 1, max: 3 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('return' as const, 'forget' as const), instance: fc.integer({ min: 0, max: n - 1 }), cost: fc.constant(0) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 700 }) }) },
    );

  it('never admits more than the limit in any window, across any interleaving', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }).chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 20 }), fc.array(step(n), { maxLength: 300 }))),
        ([n, limit, maxLease, steps]) => {
          const policy = { limit, windowMs: WINDOW_MS };
          let state: FixedWindowState | null = null;
          let nowMs = 10 * WINDOW_MS;
          const leases: (Lease | undefined)[] = Array.from({ length: n }, () => undefined);
          const admitted = new Map<number, number>();
          for (const s of steps) {
            if (s.kind === 'tick') {
              nowMs += s.ms;
              continue;
            }
            const lease = leases[s.instance];
            if (s.kind === 'forget') {
              leases[s.instance] = undefined;
              continue;
            }
            if (s.kind === 'return') {
              const units = unitsToReturn(lease, nowMs);
              if (units > 0 && state !== null && state.windowNumber === Math.floor(nowMs / WINDOW_MS)) state = { windowNumber: state.windowNumber, count: Math.max(0, state.count - units) };
              leases[s.instance] = undefined;
              continue;
            }
            let answer = answerFromLease(lease, nowMs, s.cost);
            if (answer === undefined) {
              const remaining = lease === undefined || nowMs >= lease.expiresAtMs ? limit : Math.min(...lease.decisions.map((d) => d.remaining));
              const share = Math.max(s.cost, leaseShare(remaining, n, 2, maxLease));
              const taken = decideFixedWindow(state, nowMs, policy, share);
              if (!taken.decision.allowed) continue;
              state = taken.next ?? state;
              answer = answerFromLease(leaseFrom(share, [taken.decision], [taken.next]), nowMs, s.cost);
            }
            if (answer === undefined) continue;
            leases[s.instance] = answer.lease;
            const window = Math.floor(nowMs / WINDOW_MS);
            admitted.set(window, (admitted.get(window) ?? 0) + s.cost);
          }
          for (const count of admitted.values()) expect(count).toBeLessThanOrEqual(limit);
        },
      ),
    );
  });
});
