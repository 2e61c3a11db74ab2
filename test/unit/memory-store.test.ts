import fc from 'fast-check';
import { decideFixedWindow, type FixedWindowState } from '../../src/limiter/algorithms/fixed-window';
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
