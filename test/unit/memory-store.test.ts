import fc from 'fast-check';
import { adjustFixedWindow, decideFixedWindow, windowNumberAt, type FixedWindowState } from '../../src/limiter/algorithms/fixed-window';
import type { RateLimitPolicy } from '../../src/limiter/policy';
import { MemoryWindowStore } from '../../src/limiter/stores/memory-store';

const W = 60_000;
const policy: RateLimitPolicy = { name: 'default', limit: 3, windowMs: W };

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
    for (let i = 0; i < 4; i++) decisions.push(await store.consume('k', t0 + i, policy, 1));
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(decisions[3]).toMatchObject({ resetAtMs: 11 * W, retryAfterMs: 11 * W - (t0 + 3) });
    expect(await store.consume('k', 11 * W, policy, 1)).toMatchObject({ allowed: true, remaining: 2, resetAtMs: 12 * W });
  });

  it('keeps keys independent', async () => {
    const store = new MemoryWindowStore();
    await store.consume('a', 0, policy, 3);
    expect(await store.consume('a', 1, policy, 1)).toMatchObject({ allowed: false });
    expect(await store.consume('b', 1, policy, 1)).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('cost 0 reports the window without spending or storing a key', async () => {
    const store = new MemoryWindowStore();
    expect(await store.consume('k', 0, policy, 0)).toMatchObject({ allowed: true, remaining: 3 });
    expect(store.size).toBe(0);
    await store.consume('k', 0, policy, 2);
    expect(await store.consume('k', 1, policy, 0)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await store.consume('k', 2, policy, 1)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('consume and consumeSync share one window', async () => {
    const store = new MemoryWindowStore();
    store.consumeSync('k', 0, policy, 2);
    expect(await store.consume('k', 1, policy, 1)).toMatchObject({ allowed: true, remaining: 0 });
    expect(store.consumeSync('k', 2, policy, 1)).toMatchObject({ allowed: false });
  });

  it('close() forgets every key', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', 0, policy, 3);
    await store.close();
    expect(store.size).toBe(0);
    expect(await store.consume('k', 1, policy, 1)).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('decides exactly like decideFixedWindow over a Map, for any sequence of keys, times and costs', () => {
    const callArb = fc.record({ key: fc.constantFrom('a', 'b', 'c'), step: fc.integer({ min: 0, max: 40_000 }), cost: fc.integer({ min: 0, max: 4 }) });
    fc.assert(
      fc.property(fc.array(callArb, { maxLength: 100 }), (calls) => {
        const store = new MemoryWindowStore();
        const model = new Map<string, FixedWindowState>();
        let nowMs = 1_000_000;
        for (const { key, step, cost } of calls) {
          nowMs += step;
          const expected = decideFixedWindow(model.get(key) ?? null, nowMs, policy, cost);
          if (expected.next !== null) model.set(key, expected.next);
          expect(store.consumeSync(key, nowMs, policy, cost)).toEqual(expected.decision);
        }
      }),
    );
  });
});

describe('MemoryWindowStore eviction', () => {
  it('keeps memory bounded: 1,000,000 keys over 5 windows never hold more than the keys of the last two windows', () => {
    const store = new MemoryWindowStore();
    const keysPerWindow = 200_000;
    const windows = 5;
    const bigPolicy: RateLimitPolicy = { name: 'big', limit: 10, windowMs: W };
    let maxSize = 0;
    for (let w = 0; w < windows; w++) {
      const keysOfPreviousWindow = w === 0 ? 0 : keysPerWindow;
      for (let i = 0; i < keysPerWindow; i++) {
        const nowMs = w * W + Math.floor((i * W) / keysPerWindow);
        store.consumeSync(`w${w}k${i}`, nowMs, bigPolicy, 1);
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
    const store = new MemoryWindowStore();
    const touched = new Map<number, Set<string>>(); // window number -> keys touched in it
    for (let t = 30_000; t < 4 * W; t += 1_000) {
      const key = `t${t}`;
      store.consumeSync(key, t, policy, 1);
      const w = Math.floor(t / W);
      touched.set(w, (touched.get(w) ?? new Set<string>()).add(key));
      const lastTwo = (touched.get(w)?.size ?? 0) + (touched.get(w - 1)?.size ?? 0);
      expect(store.size).toBeLessThanOrEqual(lastTwo);
    }
  });

  it('holds no more than the keys touched in the last three windows even when traffic starts mid-window', () => {
    const store = new MemoryWindowStore();
    const touched = new Map<number, number>();
    for (let t = 30_000; t < 8 * W; t += 1_000) {
      store.consumeSync(`t${t}`, t, policy, 1);
      const w = Math.floor(t / W);
      touched.set(w, (touched.get(w) ?? 0) + 1);
      const lastThree = (touched.get(w) ?? 0) + (touched.get(w - 1) ?? 0) + (touched.get(w - 2) ?? 0);
      expect(store.size).toBeLessThanOrEqual(lastThree);
    }
  });

  it('drops every key after two idle windows', () => {
    const store = new MemoryWindowStore();
    for (let i = 0; i < 100; i++) store.consumeSync(`k${i}`, 0, policy, 1);
    store.consumeSync('late', 2 * W, policy, 1);
    expect(store.size).toBe(1);
  });

  it('drops both generations after two idle rotations, not only the current one', () => {
    const store = new MemoryWindowStore();
    for (let i = 0; i < 10; i++) store.consumeSync(`first${i}`, i, policy, 1); // generation [0, W)
    for (let i = 0; i < 20; i++) store.consumeSync(`second${i}`, W + i, policy, 1); // generation [W, 2W); the first ones are previous
    expect(store.size).toBe(30);
    store.consumeSync('late', 3 * W, policy, 1); // two rotations after the second generation began
    expect(store.size).toBe(1);
  });

  it('a key read from the previous generation moves to the current one and outlives the next rotation', () => {
    const store = new MemoryWindowStore();
    store.consumeSync('k', 2 * W + 30_000, policy, 3); // generation [2W, 3W)
    store.consumeSync('k', 3 * W + 10_000, policy, 0); // a new generation: 'k' was previous, the read moves it
    store.consumeSync('other', 4 * W + 10_000, policy, 1); // one more rotation
    expect(store.size).toBe(2);
  });

  it('a clock that jumps back and forth never revives a spent window it has read since', () => {
    const store = new MemoryWindowStore();
    store.consumeSync('k', 2 * W + 30_000, policy, 3); // window 2 spent
    store.consumeSync('x', 3 * W + 12_000, policy, 1); // the clock jumps ahead: 'k' is now previous
    expect(store.consumeSync('k', 2 * W + 36_000, policy, 1)).toMatchObject({ allowed: false }); // back: still spent
    store.consumeSync('y', 4 * W + 6_000, policy, 1); // ahead again, one more rotation
    expect(store.consumeSync('k', 2 * W + 42_000, policy, 1)).toMatchObject({ allowed: false, remaining: 0 });
  });

  it.each([
    { name: 'a key used once at the very start of its window', writeAtMs: 0, readAtMs: W - 1 },
    { name: 'a key used just before its window ends', writeAtMs: W - 1, readAtMs: W - 1 },
    { name: 'a key written in a window that began mid-generation', writeAtMs: W + 30_000, readAtMs: 2 * W - 1 },
  ])('never forgets $name while its window is live, despite other keys rotating generations', ({ writeAtMs, readAtMs }) => {
    const store = new MemoryWindowStore();
    store.consumeSync('other', 30_000, policy, 1); // generation starts mid-window
    store.consumeSync('k', writeAtMs, policy, 3);
    for (let t = writeAtMs; t <= readAtMs; t += 7_000) store.consumeSync(`noise${t}`, t, policy, 1);
    expect(store.consumeSync('k', readAtMs, policy, 1)).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('never forgets a key whose window is live, whatever other keys do (property)', () => {
    const longPolicy: RateLimitPolicy = { name: 'long', limit: 2, windowMs: 3 * W };
    const callArb = fc.record({
      key: fc.constantFrom('a', 'b', 'c', 'd'),
      step: fc.integer({ min: 0, max: 3 * W }),
      long: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * W }), fc.array(callArb, { maxLength: 80 }), (start, calls) => {
        const store = new MemoryWindowStore();
        const model = new Map<string, FixedWindowState>();
        let nowMs = start;
        for (const { key, step, long } of calls) {
          nowMs += step;
          const p = long ? longPolicy : policy;
          const modelKey = `${p.name}|${key}`;
          const expected = decideFixedWindow(model.get(modelKey) ?? null, nowMs, p, 1);
          if (expected.next !== null) model.set(modelKey, expected.next);
          // The store keys by key only, so keep the two policies on disjoint keys.
          expect(store.consumeSync(modelKey, nowMs, p, 1)).toEqual(expected.decision);
        }
      }),
    );
  });
});

describe('MemoryWindowStore with mixed window lengths', () => {
  const hourly: RateLimitPolicy = { name: 'hourly', limit: 2, windowMs: 60 * W };

  it('never forgets a long window while short-window traffic keeps rotating generations', () => {
    const store = new MemoryWindowStore();
    store.consumeSync('long', 0, hourly, 2);
    // An hour of one-minute traffic on other keys: a rotation sized by the short window would drop 'long'.
    for (let t = 0; t < 60 * W; t += W / 2) store.consumeSync(`short${t}`, t, policy, 1);
    expect(store.consumeSync('long', 60 * W - 1, hourly, 1)).toMatchObject({ allowed: false, remaining: 0, resetAtMs: 60 * W });
  });

  it('sizes the rotation by the longest window seen, even when the short window came first', () => {
    const store = new MemoryWindowStore();
    store.consumeSync('short', 0, policy, 1);
    store.consumeSync('long', 1_000, hourly, 2);
    store.consumeSync('short', 5 * W, policy, 1);
    store.consumeSync('short', 30 * W, policy, 1);
    expect(store.consumeSync('long', 59 * W, hourly, 1)).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('still drops keys two long windows after they were last touched', () => {
    const store = new MemoryWindowStore();
    store.consumeSync('long', 0, hourly, 1);
    for (let i = 0; i < 50; i++) store.consumeSync(`short${i}`, i * 1_000, policy, 1);
    store.consumeSync('late', 120 * W, policy, 1);
    expect(store.size).toBe(1);
  });
});

describe('MemoryWindowStore.adjust', () => {
  it('a refund gives a unit back to a spent window', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', 1_000, policy, 3);
    await store.adjust('k', 2_000, policy, { windowNumber: 0, atLeastCount: 0, deltaUnits: -1 });
    expect(await store.consume('k', 3_000, policy, 1)).toMatchObject({ allowed: true, remaining: 0 });
    expect(await store.consume('k', 4_000, policy, 1)).toMatchObject({ allowed: false });
  });

  it('atLeastCount restores a store that restarted empty', async () => {
    const store = new MemoryWindowStore();
    await store.adjust('k', 1_000, policy, { windowNumber: 0, atLeastCount: 3, deltaUnits: 0 });
    expect(store.size).toBe(1);
    expect(await store.consume('k', 2_000, policy, 1)).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('an adjustment for a passed window changes nothing and stores no key', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', 1_000, policy, 1);
    await store.adjust('k', W + 1_000, policy, { windowNumber: 0, atLeastCount: 3, deltaUnits: 2 });
    await store.adjust('other', W + 1_000, policy, { windowNumber: 0, atLeastCount: 3, deltaUnits: 2 });
    expect(store.size).toBe(1);
    expect(await store.consume('k', W + 2_000, policy, 0)).toMatchObject({ remaining: 3 });
  });

  it('an adjustment that nets to nothing stores no key', async () => {
    const store = new MemoryWindowStore();
    await store.adjust('k', 1_000, policy, { windowNumber: 0, atLeastCount: 0, deltaUnits: 0 });
    await store.adjust('k', 1_000, policy, { windowNumber: 0, atLeastCount: 0, deltaUnits: -2 });
    expect(store.size).toBe(0);
  });

  it('adjusts a key held in the previous generation, in place', async () => {
    const store = new MemoryWindowStore();
    await store.consume('k', W - 1_000, policy, 3); // window 0
    await store.consume('k', W, policy, 2); // window 1, a new generation
    await store.consume('noise', 2 * W, policy, 1); // rotate again: 'k' is now in the previous generation
    // Another instance knew window 2 had spent 2; this one refunds 1 of them.
    await store.adjust('k', 2 * W + 1, policy, { windowNumber: 2, atLeastCount: 2, deltaUnits: -1 });
    expect(store.size).toBe(2);
    expect(await store.consume('k', 2 * W + 2, policy, 0)).toMatchObject({ remaining: 2 });
  });

  it('rejects instead of throwing when the adjustment cannot run', async () => {
    const store = new MemoryWindowStore();
    const broken = null as unknown as RateLimitPolicy;
    let pending: Promise<void> | undefined;
    expect(() => (pending = store.adjust('k', 0, broken, { windowNumber: 0, atLeastCount: 0, deltaUnits: 1 }))).not.toThrow();
    await expect(pending).rejects.toThrow(TypeError);
  });

  it('consume rejects instead of throwing when the decision cannot run', async () => {
    const store = new MemoryWindowStore();
    const broken = null as unknown as RateLimitPolicy;
    let pending: Promise<unknown> | undefined;
    expect(() => (pending = store.consume('k', 0, broken, 1))).not.toThrow();
    await expect(pending).rejects.toThrow(TypeError);
  });

  it('resolves once stored, with nothing', async () => {
    const store = new MemoryWindowStore();
    await expect(store.adjust('k', 0, policy, { windowNumber: 0, atLeastCount: 1, deltaUnits: 0 })).resolves.toBeUndefined();
  });

  it('consumes and adjusts exactly like decideFixedWindow and adjustFixedWindow over a Map (property)', () => {
    const opArb = fc.oneof(
      fc.record({ kind: fc.constant('consume' as const), key: fc.constantFrom('a', 'b'), step: fc.integer({ min: 0, max: 30_000 }), cost: fc.integer({ min: 0, max: 3 }) }),
      fc.record({
        kind: fc.constant('adjust' as const),
        key: fc.constantFrom('a', 'b'),
        step: fc.integer({ min: 0, max: 30_000 }),
        windowsBack: fc.integer({ min: 0, max: 1 }),
        atLeastCount: fc.integer({ min: 0, max: 4 }),
        deltaUnits: fc.integer({ min: -4, max: 4 }),
      }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const store = new MemoryWindowStore();
        const model = new Map<string, FixedWindowState>();
        let nowMs = 1_000_000;
        for (const op of ops) {
          nowMs += op.step;
          const state = model.get(op.key) ?? null;
          if (op.kind === 'consume') {
            const expected = decideFixedWindow(state, nowMs, policy, op.cost);
            if (expected.next !== null) model.set(op.key, expected.next);
            expect(store.consumeSync(op.key, nowMs, policy, op.cost)).toEqual(expected.decision);
          } else {
            const adjustment = { windowNumber: windowNumberAt(nowMs, W) - op.windowsBack, atLeastCount: op.atLeastCount, deltaUnits: op.deltaUnits };
            const next = adjustFixedWindow(state, nowMs, policy, adjustment);
            if (next !== null) model.set(op.key, next);
            store.adjustSync(op.key, nowMs, policy, adjustment);
          }
        }
        for (const key of ['a', 'b']) {
          const expected = decideFixedWindow(model.get(key) ?? null, nowMs, policy, 0).decision;
          expect(store.consumeSync(key, nowMs, policy, 0)).toEqual(expected);
        }
      }),
    );
  });
});

describe('MemoryWindowStore adjust input', () => {
  test.each([
    ['a NaN delta', { windowNumber: 1, atLeastCount: 0, deltaUnits: Number.NaN }],
    ['a fractional floor', { windowNumber: 1, atLeastCount: 0.5, deltaUnits: 1 }],
    ['a negative window', { windowNumber: -1, atLeastCount: 0, deltaUnits: 1 }],
  ])('refuses %s instead of writing it into the window', async (_name, adjustment) => {
    const store = new MemoryWindowStore();
    const policy = { name: 'p', limit: 5, windowMs: 60_000 };
    await expect(store.adjust('k', 60_000, policy, adjustment)).rejects.toThrow(RangeError);
    expect((await store.consume('k', 60_000, policy, 1)).remaining).toBe(4);
  });
});
