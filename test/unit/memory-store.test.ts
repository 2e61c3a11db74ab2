import fc from 'fast-check';
import type { Adjustment } from '../../src/library/window/algorithms';
import { windowNumberAt } from '../../src/library/window/fixed-window';
import { adjustSet, algorithmFor, decideSet } from '../../src/library/window/decide-set';
import type { WindowDecision } from '../../src/library/window/decision';
import type { StoreDecision } from '../../src/library/limiter/limit-store';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { DEFAULT_MEMORY_LAG_MARGIN_MS, MemoryWindowStore } from '../../src/library/memory/memory-store';

const W = 60_000;
const policy: RateLimitPolicy = { name: 'default', limit: 3, windowMs: W };
/** The one-policy set most tests hold a key to. */
const P: PolicySet = [policy];
/** A tier of two algorithms: a minute's fixed window and a token bucket of 3 refilled 2 per 10 s. */
const minute: RateLimitPolicy = { name: 'minute', limit: 4, windowMs: W };
const bucket: RateLimitPolicy = { name: 'bucket', algorithm: 'token-bucket', limit: 2, windowMs: 10_000, burst: 3 };
const TIER: PolicySet = [minute, bucket];

/** The decision of a one-policy set's only policy. */
function one(result: StoreDecision): WindowDecision | undefined {
  return result.decisions[0];
}

/** Nothing stored, for each policy of a set. */
const none = (policies: PolicySet): null[] => policies.map(() => null);

/**
 * A store's answer with every state that is empty again at `nowMs` read as
 * null: the store may drop such a state (eviction) or hand it back, and the
 * two mean the same to every algorithm.
 */
function live(result: StoreDecision, nowMs: number, policies: PolicySet): StoreDecision {
  const states = result.states.map((state, i) => {
    const policy = policies[i] as RateLimitPolicy;
    return state === null || algorithmFor(policy).expiresAtMs(state, policy) <= nowMs ? null : state;
  });
  return { allowed: result.allowed, decisions: result.decisions, states };
}

describe('MemoryWindowStore decisions', () => {
  it('is the in-process, unshared memory backend', () => {
    const store = new MemoryWindowStore();
    expect(store.backend).toBe('memory');
    expect(store.shared).toBe(false);
  });

  it('allows up to the limit in a window, refuses the next call with the time to the window end, and refills in the next window', async () => {
    const store = new MemoryWindowStore();
    const t0 = 10 * W + 5_000;
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(one(await store.consume('k', t0 + i, P, 1)));
    expect(decisions.map((d) => [d?.allowed, d?.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(decisions[3]).toMatchObject({ resetAtMs: 11 * W, retryAfterMs: 11 * W - (t0 + 3) });
    expect(one(await store.consume('k', 11 * W, P, 1))).toMatchObject({ allowed: true, remaining: 2, resetAtMs: 12 * W });
  });

  it('keeps keys independent', async () => {
    const store = new MemoryWindowStore();
    await store.consume('a', 0, P, 3);
    expect(one(await store.consume('a', 1, P, 1))).toMatchObject({ allowed: false });
    expect(one(await store.consume('b', 1, P, 1))).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('cost 0 reports the window without spending or storing a key', async () => {
    const store = new MemoryWindowStore();
    expect(one(await store.consume('k', 0, P, 0))).toMatchObject({ allowed: true, remaining: 3 });
    expect(store.size).toBe(0);
    await store.consume('k', 0, P, 2);
    expect(one(await store.consume('k', 1, P, 0))).toMatchObject({ allowed: true, remaining: 1 });
    expect(one(await store.consume('k', 2, P, 1))).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('consume and consumeSync share one window', async () => {
    const store = new MemoryWindowStore();
    store.consumeSync('k', 0, P, 2);
    expect(one(await store.consume('k', 1, P, 1))).toMatchObject({ allowed: true, remaining: 0 });
    expect(one(store.consumeSync('k', 2, P, 1))).toMatchObject({ allowed: false });
  });

  it('close() forgets every key', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', 0, P, 3);
    await store.close();
    expect(store.size).toBe(0);
    expect(one(await store.consume('k', 1, P, 1))).toMatchObject({ allowed: true, remaining: 2 });
  });

  it.each([
    { name: 'one fixed window', policies: P },
    { name: 'a fixed window and a token bucket, all or nothing', policies: TIER },
  ])('decides exactly like decideSet over a Map, for any sequence of keys, times and costs: $name', ({ policies }) => {
    const callArb = fc.record({ key: fc.constantFrom('a', 'b', 'c'), step: fc.integer({ min: 0, max: 40_000 }), cost: fc.integer({ min: 0, max: 4 }) });
    fc.assert(
      fc.property(fc.array(callArb, { maxLength: 100 }), (calls) => {
        const store = new MemoryWindowStore();
        const model = new Map<string, readonly unknown[]>();
        let nowMs = 1_000_000;
        for (const { key, step, cost } of calls) {
          nowMs += step;
          const expected = decideSet(model.get(key) ?? none(policies), nowMs, policies, cost);
          if (expected.changed) model.set(key, expected.states);
          expect(live(store.consumeSync(key, nowMs, policies, cost), nowMs, policies)).toEqual(live(expected, nowMs, policies));
        }
      }),
    );
  });
});

describe('MemoryWindowStore eviction', () => {
  it('keeps memory bounded: 1,000,000 keys over 5 windows never hold more than the keys of the last two windows', () => {
    const store = new MemoryWindowStore(0);
    const keysPerWindow = 200_000;
    const windows = 5;
    const bigPolicy: RateLimitPolicy = { name: 'big', limit: 10, windowMs: W };
    let maxSize = 0;
    for (let w = 0; w < windows; w++) {
      const keysOfPreviousWindow = w === 0 ? 0 : keysPerWindow;
      for (let i = 0; i < keysPerWindow; i++) {
        const nowMs = w * W + Math.floor((i * W) / keysPerWindow);
        store.consumeSync(`w${w}k${i}`, nowMs, [bigPolicy], 1);
        const size = store.size;
        if (size > keysOfPreviousWindow + i + 1) {
          throw new Error(`window ${w}, key ${i}: size ${size} > ${keysOfPreviousWindow + i + 1}`);
        }
        if (size > maxSize) maxSize = size;
      }
    }
    expect(maxSize).toBeLessThanOrEqual(2 * keysPerWindow);
    // Bounded, but not by forgetting: the last two windows are all still there.
    expect(store.size).toBe(2 * keysPerWindow);
  });

  it('holds no more than the keys of the last two windows even when traffic starts mid-window', () => {
    const store = new MemoryWindowStore(0);
    const touched = new Map<number, Set<string>>(); // window number -> keys touched in it
    for (let t = 30_000; t < 4 * W; t += 1_000) {
      const key = `t${t}`;
      store.consumeSync(key, t, P, 1);
      const w = Math.floor(t / W);
      touched.set(w, (touched.get(w) ?? new Set<string>()).add(key));
      const lastTwo = (touched.get(w)?.size ?? 0) + (touched.get(w - 1)?.size ?? 0);
      expect(store.size).toBeLessThanOrEqual(lastTwo);
    }
  });

  it('holds no more than the keys touched in the last three windows even when traffic starts mid-window', () => {
    const store = new MemoryWindowStore(0);
    const touched = new Map<number, number>();
    for (let t = 30_000; t < 8 * W; t += 1_000) {
      store.consumeSync(`t${t}`, t, P, 1);
      const w = Math.floor(t / W);
      touched.set(w, (touched.get(w) ?? 0) + 1);
      const lastThree = (touched.get(w) ?? 0) + (touched.get(w - 1) ?? 0) + (touched.get(w - 2) ?? 0);
      expect(store.size).toBeLessThanOrEqual(lastThree);
    }
  });

  it('drops every key after two idle windows', () => {
    const store = new MemoryWindowStore(0);
    for (let i = 0; i < 100; i++) store.consumeSync(`k${i}`, 0, P, 1);
    store.consumeSync('late', 2 * W, P, 1);
    expect(store.size).toBe(1);
  });

  it('drops both generations after two idle rotations, not only the current one', () => {
    const store = new MemoryWindowStore(0);
    for (let i = 0; i < 10; i++) store.consumeSync(`first${i}`, i, P, 1); // generation [0, W)
    for (let i = 0; i < 20; i++) store.consumeSync(`second${i}`, W + i, P, 1); // generation [W, 2W); the first ones are previous
    expect(store.size).toBe(30);
    store.consumeSync('late', 3 * W, P, 1); // two rotations after the second generation began
    expect(store.size).toBe(1);
  });

  it('a key read from the previous generation moves to the current one and outlives the next rotation', () => {
    const store = new MemoryWindowStore(0);
    // Written at a window's start, so the rotation is a whole window (it is the longest time a write has taken to expire).
    store.consumeSync('k', 2 * W, P, 3); // generation [2W, 3W)
    store.consumeSync('k', 3 * W + 10_000, P, 0); // a new generation: 'k' was previous, the read moves it
    store.consumeSync('other', 4 * W + 10_000, P, 1); // one more rotation
    expect(store.size).toBe(2);
  });

  it('a clock that jumps back and forth never revives a spent window it has read since', () => {
    const store = new MemoryWindowStore(0);
    store.consumeSync('k', 2 * W + 30_000, P, 3); // window 2 spent
    store.consumeSync('x', 3 * W + 12_000, P, 1); // the clock jumps ahead: 'k' is now previous
    expect(one(store.consumeSync('k', 2 * W + 36_000, P, 1))).toMatchObject({ allowed: false }); // back: still spent
    store.consumeSync('y', 4 * W + 6_000, P, 1); // ahead again, one more rotation
    expect(one(store.consumeSync('k', 2 * W + 42_000, P, 1))).toMatchObject({ allowed: false, remaining: 0 });
  });

  it.each([
    { name: 'a key used once at the very start of its window', writeAtMs: 0, readAtMs: W - 1 },
    { name: 'a key used just before its window ends', writeAtMs: W - 1, readAtMs: W - 1 },
    { name: 'a key written in a window that began mid-generation', writeAtMs: W + 30_000, readAtMs: 2 * W - 1 },
  ])('never forgets $name while its window is live, despite other keys rotating generations', ({ writeAtMs, readAtMs }) => {
    const store = new MemoryWindowStore(0);
    store.consumeSync('other', 30_000, P, 1); // generation starts mid-window
    store.consumeSync('k', writeAtMs, P, 3);
    for (let t = writeAtMs; t <= readAtMs; t += 7_000) store.consumeSync(`noise${t}`, t, P, 1);
    expect(one(store.consumeSync('k', readAtMs, P, 1))).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('never forgets a live state, whatever other keys and other policies of the same key do (property)', () => {
    const sets: readonly PolicySet[] = [
      P,
      [{ name: 'long', limit: 2, windowMs: 3 * W }],
      // Full again 6 minutes after it is emptied: it outlives both windows.
      [{ name: 'slow-bucket', algorithm: 'token-bucket', limit: 1, windowMs: 3 * W, burst: 2 }],
    ];
    const callArb = fc.record({
      key: fc.constantFrom('a', 'b', 'c', 'd'),
      step: fc.integer({ min: 0, max: 3 * W }),
      set: fc.integer({ min: 0, max: sets.length - 1 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * W }), fc.array(callArb, { maxLength: 80 }), (start, calls) => {
        const store = new MemoryWindowStore(0);
        // Each set's one policy has its own slot, so one key holds all three side by side.
        const model = new Map<string, readonly unknown[]>();
        let nowMs = start;
        for (const { key, step, set } of calls) {
          nowMs += step;
          const policies = sets[set] as PolicySet;
          const modelKey = `${set}|${key}`;
          const expected = decideSet(model.get(modelKey) ?? none(policies), nowMs, policies, 1);
          if (expected.changed) model.set(modelKey, expected.states);
          expect(live(store.consumeSync(key, nowMs, policies, 1), nowMs, policies)).toEqual(live(expected, nowMs, policies));
        }
      }),
    );
  });
});

describe('MemoryWindowStore lag margin', () => {
  it.each([0, 1, 5_000, DEFAULT_MEMORY_LAG_MARGIN_MS])('keeps a count %i ms past its expiry for a clock that steps back, then drops it', (lagMarginMs) => {
    const store = new MemoryWindowStore(lagMarginMs);
    store.consumeSync('k', W - 1, P, 2); // window 0 ends at W
    // A newer clock passes the expiry by the whole margin, less one ms: the count must still be there.
    store.consumeSync('other', W + lagMarginMs - 1, P, 0);
    expect(store.peek('k', P)).toEqual([{ windowNumber: 0, count: 2 }]);
    expect(one(store.consumeSync('k', W - 1, P, 1))?.remaining).toBe(0);
    // Two rotations past the margin, the key is gone.
    store.consumeSync('other', 4 * W + 2 * lagMarginMs, P, 0);
    expect(store.peek('k', P)).toEqual([null]);
  });

  it.each([-1, 1.5, Number.NaN])('refuses a lag margin of %p', (lagMarginMs) => {
    expect(() => new MemoryWindowStore(lagMarginMs)).toThrow(/lagMarginMs must be a non-negative integer/);
  });
});

describe('MemoryWindowStore with mixed window lengths', () => {
  const hourly: RateLimitPolicy = { name: 'hourly', limit: 2, windowMs: 60 * W };
  const H: PolicySet = [hourly];

  it('never forgets a long window while short-window traffic keeps rotating generations', () => {
    const store = new MemoryWindowStore(0);
    store.consumeSync('long', 0, H, 2);
    // An hour of one-minute traffic on other keys: a rotation sized by the short window would drop 'long'.
    for (let t = 0; t < 60 * W; t += W / 2) store.consumeSync(`short${t}`, t, P, 1);
    expect(one(store.consumeSync('long', 60 * W - 1, H, 1))).toMatchObject({ allowed: false, remaining: 0, resetAtMs: 60 * W });
  });

  it('sizes the rotation by the longest window seen, even when the short window came first', () => {
    const store = new MemoryWindowStore(0);
    store.consumeSync('short', 0, P, 1);
    store.consumeSync('long', 1_000, H, 2);
    store.consumeSync('short', 5 * W, P, 1);
    store.consumeSync('short', 30 * W, P, 1);
    expect(one(store.consumeSync('long', 59 * W, H, 1))).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('sizes the rotation by how long a bucket takes to refill, not only by window lengths', () => {
    // One token an hour: emptied at 0, the bucket is full again only at 60 minutes.
    const hourlyBucket: PolicySet = [{ name: 'drip', algorithm: 'token-bucket', limit: 1, windowMs: 60 * W, burst: 1 }];
    const store = new MemoryWindowStore(0);
    store.consumeSync('short', 0, P, 1);
    store.consumeSync('drip', 0, hourlyBucket, 1);
    for (let t = 0; t < 59 * W; t += W / 2) store.consumeSync(`short${t}`, t, P, 1);
    expect(one(store.consumeSync('drip', 59 * W, hourlyBucket, 1))).toMatchObject({ allowed: false, remaining: 0, resetAtMs: 60 * W });
  });

  it('still drops keys two long windows after they were last touched', () => {
    const store = new MemoryWindowStore(0);
    store.consumeSync('long', 0, H, 1);
    for (let i = 0; i < 50; i++) store.consumeSync(`short${i}`, i * 1_000, P, 1);
    store.consumeSync('late', 120 * W, P, 1);
    expect(store.size).toBe(1);
  });
});

describe('MemoryWindowStore with a policy set', () => {
  it('allows a call only when every policy allows it, and a refused call charges none of them', () => {
    const store = new MemoryWindowStore();
    // The minute window holds 4; the bucket holds 3 and refills 2 per 10 s.
    expect(store.consumeSync('k', 0, TIER, 2)).toMatchObject({ allowed: true, decisions: [{ remaining: 2 }, { remaining: 1 }] });
    // Refused by the bucket; the minute window, which would allow, reports its budget unspent.
    expect(store.consumeSync('k', 1, TIER, 2)).toMatchObject({ allowed: false, decisions: [{ allowed: true, remaining: 2 }, { allowed: false, remaining: 1 }] });
    // Nothing was charged: once the bucket has refilled, the minute window still holds these 2.
    expect(store.consumeSync('k', 5_000, TIER, 2)).toMatchObject({ allowed: true, decisions: [{ remaining: 0 }, { remaining: 0 }] });
    // Refused by the minute window alone; the bucket, full again, is not charged either.
    expect(store.consumeSync('k', 30_000, TIER, 1)).toMatchObject({ allowed: false, decisions: [{ allowed: false, remaining: 0 }, { allowed: true, remaining: 3 }] });
    expect(store.peek('k', TIER)[1]).toEqual({ scaledTokens: 0, updatedAtMs: 5_000 });
  });

  it('keeps each policy in its own slot of the key, which another set holding the same policy shares', () => {
    const store = new MemoryWindowStore();
    store.consumeSync('k', 0, TIER, 2);
    // A tier change to the minute window alone: it keeps what the minute window has spent.
    expect(one(store.consumeSync('k', 1, [minute], 1))).toMatchObject({ allowed: true, remaining: 1 });
    expect(store.size).toBe(1);
    expect(store.peek('k', TIER)).toEqual([
      { windowNumber: 0, count: 3 },
      { scaledTokens: 1 * 10_000, updatedAtMs: 0 },
    ]);
  });

  it('peek reads the states without spending, storing or rotating anything', () => {
    const store = new MemoryWindowStore();
    expect(store.peek('k', TIER)).toEqual([null, null]);
    expect(store.size).toBe(0);
    store.consumeSync('k', 0, TIER, 1);
    expect(store.peek('k', TIER)).toEqual(store.peek('k', TIER));
    expect(store.consumeSync('k', 1, TIER, 0).states).toEqual(store.peek('k', TIER));
  });
});

describe('MemoryWindowStore.adjust', () => {
  it('a refund gives a unit back to a spent window', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', 1_000, P, 3);
    await store.adjust('k', 2_000, P, [{ atLeast: null, deltaUnits: -1 }]);
    expect(one(await store.consume('k', 3_000, P, 1))).toMatchObject({ allowed: true, remaining: 0 });
    expect(one(await store.consume('k', 4_000, P, 1))).toMatchObject({ allowed: false });
  });

  it('a refund gives a token back to a bucket, never past full', async () => {
    const store = new MemoryWindowStore();
    const B: PolicySet = [bucket];
    await store.consume('k', 0, B, 3);
    await store.adjust('k', 0, B, [{ atLeast: null, deltaUnits: -1 }]);
    expect(one(await store.consume('k', 0, B, 0))).toMatchObject({ remaining: 1 });
    await store.adjust('k', 0, B, [{ atLeast: null, deltaUnits: -10 }]);
    expect(one(await store.consume('k', 0, B, 0))).toMatchObject({ remaining: 3 });
  });

  it.each([
    { name: 'a fixed window', policies: P, atLeast: { windowNumber: 0, count: 3 }, read: { allowed: false, remaining: 0 } },
    { name: 'a token bucket', policies: [bucket] as PolicySet, atLeast: { scaledTokens: 0, updatedAtMs: 1_000 }, read: { allowed: false, remaining: 0 } },
  ])('atLeast restores $name in a store that restarted empty', async ({ policies, atLeast, read }) => {
    const store = new MemoryWindowStore();
    await store.adjust('k', 1_000, policies, [{ atLeast, deltaUnits: 0 }]);
    expect(store.size).toBe(1);
    expect(one(await store.consume('k', 1_000, policies, 1))).toMatchObject(read);
  });

  it('applies each policy of a set its own adjustment, and leaves a null one untouched', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', 0, TIER, 2);
    await store.adjust('k', 0, TIER, [{ atLeast: null, deltaUnits: -2 }, null]);
    expect(store.peek('k', TIER)).toEqual([
      { windowNumber: 0, count: 0 },
      { scaledTokens: 1 * 10_000, updatedAtMs: 0 },
    ]);
  });

  it('a floor seen in a window that has passed is no floor: nothing changes and no key is stored', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', 1_000, P, 1);
    await store.adjust('k', W + 1_000, P, [{ atLeast: { windowNumber: 0, count: 3 }, deltaUnits: 0 }]);
    await store.adjust('other', W + 1_000, P, [{ atLeast: { windowNumber: 0, count: 3 }, deltaUnits: 0 }]);
    expect(store.size).toBe(1);
    expect(one(await store.consume('k', W + 2_000, P, 0))).toMatchObject({ remaining: 3 });
  });

  it('an adjustment that nets to nothing stores no key', async () => {
    const store = new MemoryWindowStore();
    await store.adjust('k', 1_000, TIER, [{ atLeast: null, deltaUnits: 0 }, { atLeast: null, deltaUnits: 0 }]);
    await store.adjust('k', 1_000, TIER, [{ atLeast: null, deltaUnits: -2 }, { atLeast: null, deltaUnits: -2 }]);
    await store.adjust('k', 1_000, TIER, none(TIER));
    expect(store.size).toBe(0);
  });

  it('adjusts a key held in the previous generation, in place', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', W - 1_000, P, 3); // window 0
    await store.consume('k', W, P, 2); // window 1, a new generation
    await store.consume('noise', 2 * W, P, 1); // rotate again: 'k' is now in the previous generation
    // Another instance knew window 2 had spent 2; this one refunds 1 of them.
    await store.adjust('k', 2 * W + 1, P, [{ atLeast: { windowNumber: 2, count: 2 }, deltaUnits: -1 }]);
    expect(store.size).toBe(2);
    expect(one(await store.consume('k', 2 * W + 2, P, 0))).toMatchObject({ remaining: 2 });
  });

  it('rejects instead of throwing when the adjustment cannot run', async () => {
    const store = new MemoryWindowStore();
    const broken = null as unknown as PolicySet;
    let pending: Promise<void> | undefined;
    expect(() => (pending = store.adjust('k', 0, broken, [{ atLeast: null, deltaUnits: 1 }]))).not.toThrow();
    await expect(pending).rejects.toThrow(TypeError);
  });

  it('consume rejects instead of throwing when the decision cannot run', async () => {
    const store = new MemoryWindowStore();
    const broken = null as unknown as PolicySet;
    let pending: Promise<unknown> | undefined;
    expect(() => (pending = store.consume('k', 0, broken, 1))).not.toThrow();
    await expect(pending).rejects.toThrow(TypeError);
  });

  it('resolves once stored, with nothing', async () => {
    const store = new MemoryWindowStore();
    await expect(store.adjust('k', 0, P, [{ atLeast: { windowNumber: 0, count: 1 }, deltaUnits: 0 }])).resolves.toBeUndefined();
  });

  it('consumes and adjusts exactly like decideSet and adjustSet over a Map, for a fixed window and a bucket (property)', () => {
    const fixedFloorArb = fc.option(fc.record({ windowsBack: fc.integer({ min: 0, max: 1 }), count: fc.integer({ min: 0, max: 4 }) }));
    const bucketFloorArb = fc.option(fc.record({ tokens: fc.integer({ min: -3, max: 3 }), agoMs: fc.integer({ min: 0, max: 20_000 }) }));
    const adjustmentArb = <F>(floor: fc.Arbitrary<F | null>) => fc.option(fc.record({ floor, deltaUnits: fc.integer({ min: -4, max: 4 }) }));
    const opArb = fc.oneof(
      fc.record({ kind: fc.constant('consume' as const), key: fc.constantFrom('a', 'b'), step: fc.integer({ min: 0, max: 30_000 }), cost: fc.integer({ min: 0, max: 3 }) }),
      fc.record({
        kind: fc.constant('adjust' as const),
        key: fc.constantFrom('a', 'b'),
        step: fc.integer({ min: 0, max: 30_000 }),
        fixed: adjustmentArb(fixedFloorArb),
        bucket: adjustmentArb(bucketFloorArb),
      }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const store = new MemoryWindowStore();
        const model = new Map<string, readonly unknown[]>();
        let nowMs = 1_000_000;
        for (const op of ops) {
          nowMs += op.step;
          const states = model.get(op.key) ?? none(TIER);
          if (op.kind === 'consume') {
            const expected = decideSet(states, nowMs, TIER, op.cost);
            if (expected.changed) model.set(op.key, expected.states);
            expect(live(store.consumeSync(op.key, nowMs, TIER, op.cost), nowMs, TIER)).toEqual(live(expected, nowMs, TIER));
          } else {
            const adjustments: (Adjustment<unknown> | null)[] = [
              op.fixed && {
                atLeast: op.fixed.floor && { windowNumber: windowNumberAt(nowMs, W) - op.fixed.floor.windowsBack, count: op.fixed.floor.count },
                deltaUnits: op.fixed.deltaUnits,
              },
              op.bucket && {
                atLeast: op.bucket.floor && { scaledTokens: op.bucket.floor.tokens * bucket.windowMs, updatedAtMs: nowMs - op.bucket.floor.agoMs },
                deltaUnits: op.bucket.deltaUnits,
              },
            ];
            const next = adjustSet(states, nowMs, TIER, adjustments);
            if (next !== null) model.set(op.key, next);
            store.adjustSync(op.key, nowMs, TIER, adjustments);
          }
        }
        for (const key of ['a', 'b']) {
          expect(live(store.consumeSync(key, nowMs, TIER, 0), nowMs, TIER)).toEqual(live(decideSet(model.get(key) ?? none(TIER), nowMs, TIER, 0), nowMs, TIER));
        }
      }),
    );
  });
});

describe('MemoryWindowStore adjust input', () => {
  const five: PolicySet = [{ name: 'p', limit: 5, windowMs: 60_000 }];
  test.each([
    ['a NaN delta', { atLeast: null, deltaUnits: Number.NaN }],
    ['a fractional delta', { atLeast: null, deltaUnits: 0.5 }],
    ['an infinite delta', { atLeast: null, deltaUnits: Number.POSITIVE_INFINITY }],
    ['a floor with a fractional count', { atLeast: { windowNumber: 1, count: 0.5 }, deltaUnits: 1 }],
    ['a floor in a negative window', { atLeast: { windowNumber: -1, count: 0 }, deltaUnits: 1 }],
    ['a floor of another algorithm (a bucket state for a fixed window)', { atLeast: { scaledTokens: 0, updatedAtMs: 60_000 }, deltaUnits: 1 }],
  ])('refuses %s instead of writing it into the window', async (_name, adjustment) => {
    const store = new MemoryWindowStore();
    await expect(store.adjust('k', 60_000, five, [adjustment])).rejects.toThrow(RangeError);
    expect(one(await store.consume('k', 60_000, five, 1))?.remaining).toBe(4);
  });
});
