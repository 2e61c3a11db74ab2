import fc from 'fast-check';
import type { FixedWindowState, TokenBucketState } from '../../src/library/window/algorithms';
import { adjustSet, decideSet } from '../../src/library/window/decide-set';
import { OutageLedger } from '../../src/library/limiter/outage-ledger';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';

const W = 60_000;
const fixed: RateLimitPolicy = { name: 'default', limit: 10, windowMs: W };
/** Ten tokens, refilled ten per minute. */
const bucket: RateLimitPolicy = { name: 'bucket', algorithm: 'token-bucket', limit: 10, windowMs: W };
const FIXED: PolicySet = [fixed];
const BUCKET: PolicySet = [bucket];
const TIER: PolicySet = [fixed, bucket];
const N = 500; // window number used throughout
const at = (offsetMs = 1_000) => N * W + offsetMs;
/** When window N's states are empty again. */
const END_N = (N + 1) * W;

const windowOf = (count: number, windowNumber = N): FixedWindowState => ({ windowNumber, count });
const bucketOf = (tokens: number, updatedAtMs = at()): TokenBucketState => ({ scaledTokens: tokens * W, updatedAtMs });

/**
 * What a local window started from the ledger's floor has left at `nowMs`, per
 * policy: the floor merged into empty local states (as the limiter does), then
 * read at cost 0. This is what the floor means, whatever the algorithm.
 */
function remainingFrom(ledger: OutageLedger, ledgerKey: string, nowMs: number, policies: PolicySet): number[] {
  const empty = policies.map(() => null);
  const floor = ledger.floorFor(ledgerKey, policies);
  const states = adjustSet(empty, nowMs, policies, floor.map((atLeast) => (atLeast === null ? null : { atLeast, deltaUnits: 0 }))) ?? empty;
  return decideSet(states, nowMs, policies, 0).decisions.map((d) => d.remaining);
}

describe('OutageLedger floors', () => {
  test.each([
    ['nothing known: a whole window', [], 10],
    ['the state of the last shared reply', [windowOf(4)], 6],
    ['a later, less spent reply does not lower what is known (replies can overtake)', [windowOf(7), windowOf(5)], 3],
    ['an older window arriving late does not replace the newer one', [windowOf(3), windowOf(9, N - 1)], 7],
    ['a newer window replaces an older one, even with a lower count', [windowOf(10, N - 1), windowOf(1)], 9],
    ['a count from a passed window is no floor', [windowOf(8, N - 1)], 10],
    ['a window spent past its limit stays spent', [windowOf(12)], 0],
  ] as const)('fixed window: %s', (_name, replies, remaining) => {
    const ledger = new OutageLedger();
    for (const state of replies) ledger.observe('k', [state], FIXED, at());
    expect(remainingFrom(ledger, 'k', at(), FIXED)).toEqual([remaining]);
  });

  test.each([
    ['nothing known: a full bucket', [], at(), 10],
    ['the state of the last shared reply', [bucketOf(4)], at(), 4],
    ['a later, fuller reply does not refill what is known (replies can overtake)', [bucketOf(2), bucketOf(6)], at(), 2],
    ['an older, emptier reply arriving late still counts', [bucketOf(6), bucketOf(1, at() - 6_000)], at(), 2],
    ['what is known refills with time: half a minute later, 5 more tokens', [bucketOf(0)], at() + W / 2, 5],
    ['a bucket in debt stays empty until the debt is paid', [bucketOf(-3)], at() + 12_000, 0],
  ] as const)('token bucket: %s', (_name, replies, readAtMs, remaining) => {
    const ledger = new OutageLedger();
    for (const state of replies) ledger.observe('k', [state], BUCKET, at());
    expect(remainingFrom(ledger, 'k', readAtMs, BUCKET)).toEqual([remaining]);
  });

  test('keeps one floor per policy of a set, each merged by its own algorithm', () => {
    const ledger = new OutageLedger();
    ledger.observe('k', [windowOf(7), bucketOf(2)], TIER, at());
    ledger.observe('k', [windowOf(5), bucketOf(4)], TIER, at());
    expect(ledger.floorFor('k', TIER)).toEqual([windowOf(7), bucketOf(2)]);
    expect(remainingFrom(ledger, 'k', at(), TIER)).toEqual([3, 2]);
  });

  test('keeps ledger keys apart', () => {
    const ledger = new OutageLedger();
    ledger.observe('a', [windowOf(9)], FIXED, at());
    expect(ledger.floorFor('b', FIXED)).toEqual([null]);
    expect(ledger.floorFor('b', TIER)).toEqual([null, null]);
  });

  test.each([
    { name: 'a fixed window', policies: FIXED, state: fc.record({ windowNumber: fc.constant(N), count: fc.integer({ min: 0, max: 14 }) }) as fc.Arbitrary<unknown> },
    {
      name: 'a token bucket',
      policies: BUCKET,
      state: fc.record({ scaledTokens: fc.integer({ min: -3 * W, max: 10 * W }), updatedAtMs: fc.integer({ min: at(0), max: at(30_000) }) }) as fc.Arbitrary<unknown>,
    },
  ])('property, $name: the floor is exactly as spent as the most spent state observed, whatever their order', ({ policies, state }) => {
    const readAtMs = at(40_000);
    fc.assert(
      fc.property(fc.array(state, { minLength: 1, maxLength: 12 }), (replies) => {
        const ledger = new OutageLedger();
        for (const reply of replies) ledger.observe('k', [reply], policies, at(0));
        const each = replies.map((reply) => decideSet([reply], readAtMs, policies, 0).decisions[0]?.remaining ?? Number.NaN);
        expect(remainingFrom(ledger, 'k', readAtMs, policies)).toEqual([Math.min(...each)]);
      }),
    );
  });
});

describe('OutageLedger grants', () => {
  test('grants accumulate and carry the floor known when the first was granted', () => {
    const ledger = new OutageLedger();
    ledger.observe('k', [windowOf(3)], FIXED, at());
    ledger.grantLocally('k', 'tok', FIXED, 2, END_N, at());
    ledger.observe('k', [windowOf(6)], FIXED, at());
    ledger.grantLocally('k', 'tok', FIXED, 1, END_N, at());
    expect(ledger.pendingUnits).toBe(3);
    expect(ledger.take('k', at())).toEqual({ key: 'tok', policies: FIXED, adjustments: [{ atLeast: windowOf(3), deltaUnits: 3 }], expiresAtMs: END_N });
    expect(ledger.hasPending).toBe(false);
  });

  test('a grant to a set owes every policy the units, each over its own floor', () => {
    const ledger = new OutageLedger();
    ledger.observe('k', [windowOf(4), bucketOf(5)], TIER, at());
    ledger.grantLocally('k', 'tok', TIER, 2, END_N, at());
    expect(ledger.take('k', at())).toEqual({
      key: 'tok',
      policies: TIER,
      adjustments: [
        { atLeast: windowOf(4), deltaUnits: 2 },
        { atLeast: bucketOf(5), deltaUnits: 2 },
      ],
      expiresAtMs: END_N,
    });
  });

  test('a grant with nothing known owes the units over no floor', () => {
    const ledger = new OutageLedger();
    ledger.grantLocally('k', 'tok', BUCKET, 1, at(6_000), at());
    expect(ledger.take('k', at())?.adjustments).toEqual([{ atLeast: null, deltaUnits: 1 }]);
  });

  test('negative grants give units back but never below zero, and alone create nothing', () => {
    const ledger = new OutageLedger();
    ledger.grantLocally('k', 'tok', FIXED, -1, at(), at());
    expect(ledger.hasPending).toBe(false);
    ledger.grantLocally('k', 'tok', FIXED, 2, END_N, at());
    ledger.grantLocally('k', 'tok', FIXED, -5, at(), at());
    expect(ledger.pendingUnits).toBe(0);
    expect(ledger.take('k', at())).toBeUndefined();
  });

  test('a later grant that outlives the first keeps the whole grant until its own states are empty', () => {
    const ledger = new OutageLedger();
    ledger.grantLocally('k', 'tok', BUCKET, 3, at(18_000), at());
    ledger.grantLocally('k', 'tok', BUCKET, 1, at(25_000), at(1_000));
    expect(ledger.take('k', at(20_000))).toMatchObject({ adjustments: [{ deltaUnits: 4 }], expiresAtMs: at(25_000) });
  });

  test.each([
    { name: 'a fixed window: a grant in the next window', policies: FIXED, first: { expiresAtMs: END_N, nowMs: at() }, next: { expiresAtMs: END_N + W, nowMs: END_N + 1_000 } },
    { name: 'a token bucket: a grant after the bucket was full again', policies: BUCKET, first: { expiresAtMs: at(24_000), nowMs: at() }, next: { expiresAtMs: at(36_000), nowMs: at(30_000) } },
  ])('$name replaces a grant whose states are empty again, with the floor known now', ({ policies, first, next }) => {
    const ledger = new OutageLedger();
    ledger.grantLocally('k', 'tok', policies, 4, first.expiresAtMs, first.nowMs);
    const floorNow = policies === FIXED ? windowOf(2, N + 1) : bucketOf(8, at(30_000));
    ledger.observe('k', [floorNow], policies, next.nowMs);
    ledger.grantLocally('k', 'tok', policies, 1, next.expiresAtMs, next.nowMs);
    expect(ledger.pendingUnits).toBe(1);
    expect(ledger.take('k', next.nowMs)).toEqual({ key: 'tok', policies, adjustments: [{ atLeast: floorNow, deltaUnits: 1 }], expiresAtMs: next.expiresAtMs });
  });

  test('drain returns live reconciliations and forgets those whose states are empty again; take does the same for one key', () => {
    const ledger = new OutageLedger();
    ledger.grantLocally('old', 'tok_old', FIXED, 4, N * W, at(-W));
    ledger.grantLocally('live', 'tok_live', FIXED, 2, END_N, at());
    ledger.grantLocally('gone', 'tok_gone', FIXED, 1, N * W, at(-W));
    ledger.grantLocally('bucket', 'tok_bucket', BUCKET, 3, at(2_000), at());
    expect(ledger.take('gone', at(2_000))).toBeUndefined();
    expect(ledger.drain(at(2_000)).map((p) => [p.key, p.adjustments[0]?.deltaUnits])).toEqual([['tok_live', 2]]);
    expect(ledger.hasPending).toBe(false);
  });

  test('restore merges a failed write-back with what was granted since', () => {
    const ledger = new OutageLedger();
    ledger.observe('k', [windowOf(3), bucketOf(7)], TIER, at());
    ledger.grantLocally('k', 'tok', TIER, 2, END_N, at());
    const [pending] = ledger.drain(at());
    ledger.grantLocally('k', 'tok', TIER, 1, END_N, at());
    ledger.restore('k', pending!, at());
    expect(ledger.take('k', at())?.adjustments.map((a) => a.deltaUnits)).toEqual([3, 3]);
    ledger.restore('k', pending!, at());
    expect(ledger.take('k', at())).toEqual(pending);
  });

  test('clear forgets everything', () => {
    const ledger = new OutageLedger();
    ledger.observe('k', [windowOf(1)], FIXED, at());
    ledger.grantLocally('k', 'tok', FIXED, 1, END_N, at());
    ledger.clear();
    expect(ledger.hasPending).toBe(false);
    expect(ledger.floorFor('k', FIXED)).toEqual([null]);
  });

  test('property: what is drained equals what was granted in the live window, whatever the keys and units', () => {
    const grantArb = fc.record({ key: fc.constantFrom('a', 'b', 'c'), window: fc.constantFrom(N - 1, N), units: fc.integer({ min: -2, max: 5 }) });
    fc.assert(
      fc.property(fc.array(grantArb), (unordered) => {
        // Time only moves forward: every grant of window N-1 comes before those of window N.
        const grants = [...unordered].sort((x, y) => x.window - y.window);
        const ledger = new OutageLedger();
        const expected = new Map<string, { window: number; units: number }>();
        for (const g of grants) {
          ledger.grantLocally(g.key, g.key, FIXED, g.units, (g.window + 1) * W, g.window * W + 1_000);
          const last = expected.get(g.key);
          if (last !== undefined && last.window === g.window) last.units = Math.max(0, last.units + g.units);
          else if (g.units > 0) expected.set(g.key, { window: g.window, units: g.units });
        }
        const drained = new Map(ledger.drain(at()).map((p) => [p.key, p.adjustments[0]?.deltaUnits]));
        for (const key of ['a', 'b', 'c']) {
          const e = expected.get(key);
          if (e !== undefined && e.window === N && e.units > 0) expect(drained.get(key)).toBe(e.units);
          else expect(drained.has(key)).toBe(false);
        }
      }),
    );
  });
});
