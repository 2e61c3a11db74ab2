import fc from 'fast-check';
import { MemoryUpstreamQuotaStore } from '../../../src/library/memory/upstream-memory-store';
import { CachedUpstreamQuota, type CachedUpstreamQuotaOptions } from '../../../src/library/quota/upstream-cursor-cache';
import { holderIdOf, type UpstreamCaller } from '../../../src/library/schedule/upstream-holder';
import type { UpstreamPolicy } from '../../../src/library/schedule/upstream-policy';
import { scheduleUpstream } from '../../../src/library/schedule/upstream-schedule';
import { fcNumRuns } from '../../support/fc-num-runs';
import { HeldReplyStore, settled } from './held-reply-store';

// The cursor cache over an in-process store whose replies the test holds and
// delivers; time is injected as nowMs, nothing sleeps.

const T0 = 1_700_000_000_000;
/** One call a second (T = 1000 ms), 100 ms of grace, two reservations at most. */
const QUEUE: UpstreamPolicy = { limit: 1, windowMs: 1000, headroomBp: 10_000, maxWaitMs: 10_000, dailyBudget: 0, graceMs: 100, maxReservations: 2, maxReservationsPerHolder: 2 };
/** One call a second and no waiting: after a run, everyone else that second is rejected. */
const NO_WAIT: UpstreamPolicy = { ...QUEUE, maxWaitMs: 0, graceMs: 0, maxReservations: 1, maxReservationsPerHolder: 1 };
/** Room for every caller: each new one takes a reservation (a write). */
const ROOM: UpstreamPolicy = { ...QUEUE, maxWaitMs: 7 * 86_400_000, graceMs: 0, maxReservations: 1000 };

/** Caller i; `claimSlotAtMs`: the slot it echoes (its reservation id), when it comes back for one. */
const caller = (i: number, claimSlotAtMs?: number): UpstreamCaller => ({ tokenId: `tok_${String(i).padStart(16, '0')}`, tool: 'search', ...(claimSlotAtMs === undefined ? {} : { claimSlotAtMs }) });

function setup(options: Omit<CachedUpstreamQuotaOptions, 'store'> = {}): { store: HeldReplyStore; cache: CachedUpstreamQuota } {
  const store = new HeldReplyStore();
  return { store, cache: new CachedUpstreamQuota({ store, ...options }) };
}

/** Through the cache at T0: caller 0 runs, callers 1 and 2 take the two reservations (slots T0+1000, T0+2100). */
async function fillQueue(cache: CachedUpstreamQuota, key = 'q'): Promise<void> {
  for (let i = 0; i < 3; i++) await cache.schedule(key, T0, caller(i), QUEUE);
}

describe('CachedUpstreamQuota: what is answered locally and what goes to the store', () => {
  test('a rejection on a fresh cached state is answered locally with that state; the store is neither asked nor written', async () => {
    const { store, cache } = setup();
    await fillQueue(cache);
    const before = store.memory.peek('q');
    const answers = await Promise.all([3, 4, 5].map((i) => cache.schedule('q', T0 + 10, caller(i), QUEUE)));
    expect(answers).toEqual(Array(3).fill({ outcome: { status: 'rejected', reason: 'reservations_full', retryAfterMs: 1091 }, state: before }));
    expect(cache.stats).toEqual({ answeredLocally: 3, forwarded: 3 });
    expect(store.calls).toHaveLength(3);
    expect(store.memory.peek('q')).toBe(before);
  });

  test('a holder back before its slot is told the same slot locally', async () => {
    const { store, cache } = setup();
    await fillQueue(cache);
    expect((await cache.schedule('q', T0 + 400, caller(1, T0 + 1000), QUEUE)).outcome).toEqual({ status: 'reserved', slotAtMs: T0 + 1000, retryAfterMs: 600 });
    expect(store.calls).toHaveLength(3);
  });

  test('a holder back at its slot goes to the store and runs on its claim, which the store then forgets', async () => {
    const { store, cache } = setup();
    await fillQueue(cache);
    expect((await cache.schedule('q', T0 + 1000, caller(1), QUEUE)).outcome).toEqual({ status: 'run', claimed: true, slotAtMs: T0 + 1000 });
    expect(cache.stats).toEqual({ answeredLocally: 0, forwarded: 4 });
    expect(store.memory.peek('q')?.reservations.map((r) => r.holder)).toEqual([holderIdOf(caller(2))]);
  });

  test('a caller who would run or take a reservation on the cached state goes to the store', async () => {
    const { store, cache } = setup();
    await cache.schedule('q', T0, caller(0), QUEUE);
    expect((await cache.schedule('q', T0 + 1, caller(1), QUEUE)).outcome).toEqual({ status: 'reserved', slotAtMs: T0 + 1000, retryAfterMs: 999 });
    expect((await cache.schedule('q', T0 + 5000, caller(2), QUEUE)).outcome).toEqual({ status: 'run', claimed: false });
    expect(store.calls).toHaveLength(3);
  });

  test.each<[string, number | undefined, number, 'local' | 'store']>([
    ['by default a state 1000 ms old still answers', undefined, 1000, 'local'],
    ['by default a state 1001 ms old does not', undefined, 1001, 'store'],
    ['with maxStalenessMs 250, a state 250 ms old answers', 250, 250, 'local'],
    ['with maxStalenessMs 250, a state 251 ms old does not', 250, 251, 'store'],
    ['a clock up to the staleness behind the cached state is answered from it', 250, -250, 'local'],
    ['a clock stepped back further than the staleness is not', 250, -251, 'store'],
  ])('%s', async (_name, maxStalenessMs, ageMs, where) => {
    const { store, cache } = setup({ maxStalenessMs });
    await fillQueue(cache);
    const answer = await cache.schedule('q', T0 + ageMs, caller(9), QUEUE);
    expect(answer.outcome).toMatchObject({ status: 'rejected', reason: 'reservations_full' });
    expect({ where: store.calls.length === 3 ? 'local' : 'store', stats: cache.stats }).toEqual({
      where,
      stats: where === 'local' ? { answeredLocally: 1, forwarded: 3 } : { answeredLocally: 0, forwarded: 4 },
    });
  });

  test("a store's answer refreshes the cache: staleness counts from the latest call that went to the store", async () => {
    const { store, cache } = setup({ maxStalenessMs: 250 });
    await fillQueue(cache);
    await cache.schedule('q', T0 + 300, caller(9), QUEUE); // stale: asked of the store, which rejects too
    await cache.schedule('q', T0 + 550, caller(9), QUEUE); // 250 after the refresh, 550 after the fill
    expect(store.calls.map((c) => c.nowMs)).toEqual([T0, T0, T0, T0 + 300]);
  });

  test('a clock stepped back past the staleness asks the store, which may have freed a slot since, and its answer is remembered', async () => {
    const { store, cache } = setup({ maxStalenessMs: 250 });
    await fillQueue(cache); // seen at T0: full, reservations at T0+1000 and T0+2100
    store.memory.scheduleSync('q', T0 + 1000, caller(1), QUEUE); // another instance: caller 1 claims its slot
    // This instance's clock steps back 4 s: the state seen at T0 would say "full" until the clock passed T0 again.
    expect((await cache.schedule('q', T0 - 4000, caller(9), QUEUE)).outcome).toEqual({ status: 'reserved', slotAtMs: T0 + 3200, retryAfterMs: 7200 });
    expect((await cache.schedule('q', T0 - 3990, caller(10), QUEUE)).outcome).toMatchObject({ status: 'rejected', reason: 'reservations_full' });
    expect(cache.stats).toEqual({ answeredLocally: 1, forwarded: 4 });
  });

  test('keys are cached apart: a full queue on one says nothing about another', async () => {
    const { store, cache } = setup();
    await fillQueue(cache, 'a');
    expect((await cache.schedule('b', T0 + 10, caller(9), QUEUE)).outcome).toEqual({ status: 'run', claimed: false });
    expect(store.calls.map((c) => c.key)).toEqual(['a', 'a', 'a', 'b']);
  });

  test('with maxStalenessMs 0 the cache is off: every call goes to the store, even in the same millisecond, and none waits for another', async () => {
    const { store, cache } = setup({ maxStalenessMs: 0 });
    await cache.schedule('q', T0, caller(0), NO_WAIT);
    store.holding = true;
    const answers = Promise.all([1, 2, 3].map((i) => cache.schedule('q', T0, caller(i), NO_WAIT)));
    await settled();
    expect(store.held).toHaveLength(3);
    while (store.held.length > 0) await store.deliver();
    expect((await answers).map((a) => a.outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(cache.stats).toEqual({ answeredLocally: 0, forwarded: 4 });
  });

  test('close forgets every cached state and closes the store', async () => {
    const { store, cache } = setup();
    await fillQueue(cache);
    await cache.close();
    expect(store.closed).toBe(true);
    await cache.schedule('q', T0 + 10, caller(9), QUEUE);
    expect(cache.stats).toEqual({ answeredLocally: 0, forwarded: 4 });
  });
});

describe('CachedUpstreamQuota: options', () => {
  test.each<[string, Omit<CachedUpstreamQuotaOptions, 'store'>, string]>([
    ['a negative staleness', { maxStalenessMs: -1 }, 'CachedUpstreamQuota: maxStalenessMs must be a non-negative integer, got -1'],
    ['a fractional staleness', { maxStalenessMs: 0.5 }, 'CachedUpstreamQuota: maxStalenessMs must be a non-negative integer, got 0.5'],
    ['an infinite staleness', { maxStalenessMs: Infinity }, 'CachedUpstreamQuota: maxStalenessMs must be a non-negative integer, got Infinity'],
    ['no keys', { maxKeys: 0 }, 'CachedUpstreamQuota: maxKeys must be a positive integer, got 0'],
    ['a fractional key count', { maxKeys: 1.5 }, 'CachedUpstreamQuota: maxKeys must be a positive integer, got 1.5'],
  ])('refuses %s, naming the option and the value', (_name, options, message) => {
    expect(() => new CachedUpstreamQuota({ store: new HeldReplyStore(), ...options })).toThrow(new RangeError(message));
  });

  test('accepts the smallest values: staleness 0 and one key', () => {
    expect(() => new CachedUpstreamQuota({ store: new HeldReplyStore(), maxStalenessMs: 0, maxKeys: 1 })).not.toThrow();
  });

  test('reports the backend of the store it wraps', () => {
    expect(new CachedUpstreamQuota({ store: new HeldReplyStore('redis') }).backend).toBe('redis');
  });
});

describe('CachedUpstreamQuota: which keys it remembers', () => {
  /** One run per key at T0 leaves a state on which everyone else that second is rejected (NO_WAIT). */
  async function seeKeys(cache: CachedUpstreamQuota, keys: readonly string[], atMs = T0): Promise<void> {
    for (const key of keys) await cache.schedule(key, atMs, caller(0), NO_WAIT);
  }
  /** Which keys answer a rejection locally now. */
  async function remembered(store: HeldReplyStore, cache: CachedUpstreamQuota, keys: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    for (const key of keys) {
      const calls = store.calls.length;
      await cache.schedule(key, T0 + 1, caller(1), NO_WAIT);
      if (store.calls.length === calls) out.push(key);
    }
    return out;
  }

  test('by default 100 keys are remembered; the 101st drops the least recently seen', async () => {
    const { store, cache } = setup();
    const keys = Array.from({ length: 101 }, (_, i) => `k${i}`);
    await seeKeys(cache, keys.slice(0, 100));
    expect(await remembered(store, cache, keys.slice(0, 100))).toEqual(keys.slice(0, 100));
    await seeKeys(cache, ['k100']);
    // Probing k0 last: its probe goes to the store and is remembered again.
    expect(await remembered(store, cache, ['k1', 'k100', 'k0'])).toEqual(['k1', 'k100']);
  });

  test('with maxKeys 2, a third key drops the one least recently answered by the store, and a refresh counts as seen', async () => {
    const { store, cache } = setup({ maxKeys: 2 });
    await seeKeys(cache, ['a', 'b']);
    await seeKeys(cache, ['a'], T0 + 1000); // the next run on a: a store call, which refreshes a
    await seeKeys(cache, ['c']);
    expect(await remembered(store, cache, ['a', 'c'])).toEqual(['a', 'c']);
    expect(await remembered(store, cache, ['b'])).toEqual([]);
  });
});

describe('CachedUpstreamQuota: replies out of order', () => {
  /**
   * Two calls in flight at once on one instance: both wait for a first call,
   * which fails, so both then ask the store. Each is decided as it is made;
   * their replies are held.
   */
  async function twoInFlight(store: HeldReplyStore, cache: CachedUpstreamQuota, atMs: readonly [number, number]): Promise<Promise<unknown>[]> {
    store.holding = true;
    store.fail = new Error('store down');
    const failing = cache.schedule('q', T0, caller(0), QUEUE).catch((error: unknown) => error);
    store.fail = undefined;
    const calls = atMs.map((nowMs, i) => cache.schedule('q', nowMs, caller(i + 1), QUEUE));
    await settled();
    await store.deliver(0);
    expect(await failing).toEqual(new Error('store down'));
    expect(store.held.map((h) => h.nowMs)).toEqual(atMs);
    return calls;
  }

  test('a reply to an earlier clock arriving after one to a later clock does not replace the later view', async () => {
    const { store, cache } = setup();
    const calls = await twoInFlight(store, cache, [T0 + 10, T0 + 20]); // the store runs the first, then reserves T0+1010 for the second
    await store.deliver(1);
    await store.deliver(0);
    await Promise.all(calls);
    store.holding = false;
    // The view kept is the later one, which holds caller 2's reservation.
    expect((await cache.schedule('q', T0 + 30, caller(2, T0 + 1010), QUEUE)).outcome).toEqual({ status: 'reserved', slotAtMs: T0 + 1010, retryAfterMs: 980 });
    expect(cache.stats).toEqual({ answeredLocally: 1, forwarded: 3 });
  });

  test.each<[string, number, 'kept' | 'replaced']>([
    ['kept while it is at most the staleness ahead', 250, 'kept'],
    ['replaced once it is further ahead than the staleness (a clock that stepped back)', 251, 'replaced'],
  ])('the later view, when an earlier reply arrives after it, is %s', async (_name, gapMs, fate) => {
    const { store, cache } = setup({ maxStalenessMs: 250 });
    const calls = await twoInFlight(store, cache, [T0 + 10, T0 + 10 + gapMs]);
    await store.deliver(1);
    await store.deliver(0);
    await Promise.all(calls);
    store.holding = false;
    // Only the later view holds caller 2's reservation, and only it is fresh at its own clock.
    await cache.schedule('q', T0 + 10 + gapMs, caller(2, T0 + 1010), QUEUE);
    expect(cache.stats.answeredLocally).toBe(fate === 'kept' ? 1 : 0);
  });

  test('with two calls in flight, a newcomer wakes on the reply of the first one made', async () => {
    const { store, cache } = setup();
    const calls = await twoInFlight(store, cache, [T0 + 10, T0 + 20]);
    const newcomer = cache.schedule('q', T0 + 30, caller(3), QUEUE); // no state yet: it waits
    await settled();
    expect(store.held).toHaveLength(2);
    await store.deliver(0); // the first call's reply: the newcomer wakes, would take a slot, and asks the store
    expect(store.held.map((h) => h.nowMs)).toEqual([T0 + 20, T0 + 30]);
    while (store.held.length > 0) await store.deliver();
    await Promise.all([...calls, newcomer]);
  });

  test('a reply to the same clock as the cached view replaces it', async () => {
    const { store, cache } = setup();
    const calls = await twoInFlight(store, cache, [T0 + 10, T0 + 10]);
    await store.deliver(0);
    await store.deliver(0);
    await Promise.all(calls);
    store.holding = false;
    expect((await cache.schedule('q', T0 + 30, caller(2, T0 + 1010), QUEUE)).outcome).toEqual({ status: 'reserved', slotAtMs: T0 + 1010, retryAfterMs: 980 });
    expect(cache.stats).toEqual({ answeredLocally: 1, forwarded: 3 });
  });
});

describe('CachedUpstreamQuota: one store call per key in flight', () => {
  test('a cold cache under parallel calls asks the store once and answers the rest from its reply', async () => {
    const { store, cache } = setup();
    for (let i = 0; i < 3; i++) store.memory.scheduleSync('q', T0, caller(i), QUEUE); // another instance filled the queue
    store.holding = true;
    const answers = Promise.all([3, 4, 5, 6].map((i) => cache.schedule('q', T0 + 10, caller(i), QUEUE)));
    await settled();
    expect(store.held).toHaveLength(1);
    await store.deliver();
    expect((await answers).map((a) => a.outcome.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(cache.stats).toEqual({ answeredLocally: 3, forwarded: 1 });
  });

  test('a stale cache waits for the call in flight too, and decides on its reply whatever that reply\'s age', async () => {
    const { store, cache } = setup({ maxStalenessMs: 250 });
    await fillQueue(cache);
    store.holding = true;
    const refresh = cache.schedule('q', T0 + 300, caller(3), QUEUE);
    // 250 ms after the refresh's own clock: a state that old would not answer a fresh call, but a waiter takes it.
    const waiter = cache.schedule('q', T0 + 551, caller(4), QUEUE);
    await settled();
    expect(store.held).toHaveLength(1);
    await store.deliver();
    expect((await waiter).outcome).toEqual({ status: 'rejected', reason: 'reservations_full', retryAfterMs: T0 + 1101 - (T0 + 551) });
    await refresh;
    expect(cache.stats).toEqual({ answeredLocally: 1, forwarded: 4 });
  });

  test('a call the cache can answer does not wait for a store call in flight', async () => {
    const { store, cache } = setup();
    await fillQueue(cache);
    store.holding = true;
    const claim = cache.schedule('q', T0 + 1000, caller(1), QUEUE); // a write: to the store, and held there
    let answered = false;
    const rejection = cache.schedule('q', T0 + 1000, caller(9), QUEUE).then((a) => ((answered = true), a));
    await settled();
    expect({ answered, held: store.held.length }).toEqual({ answered: true, held: 1 });
    await store.deliver();
    expect((await claim).outcome).toEqual({ status: 'run', claimed: true, slotAtMs: T0 + 1000 });
    expect((await rejection).outcome).toMatchObject({ status: 'rejected', reason: 'reservations_full' });
  });

  test('parallel callers who would each take a slot go to the store one after another, each deciding on the previous reply', async () => {
    const { store, cache } = setup();
    await cache.schedule('q', T0, caller(0), QUEUE);
    store.holding = true;
    const answers = Promise.all([1, 2, 3, 4].map((i) => cache.schedule('q', T0 + 1, caller(i), QUEUE)));
    const inFlight: number[] = [];
    for (let round = 0; round < 2; round++) {
      await settled();
      inFlight.push(store.held.length);
      await store.deliver();
    }
    expect(inFlight).toEqual([1, 1]);
    // The second reservation's reply shows the queue full: the last two callers are answered from it.
    expect((await answers).map((a) => a.outcome.status)).toEqual(['reserved', 'reserved', 'rejected', 'rejected']);
    expect(store.held).toHaveLength(0);
    expect(cache.stats).toEqual({ answeredLocally: 2, forwarded: 3 });
  });

  test('a caller that waited for 8 replies, each of which it would still write on, asks the store itself', async () => {
    const { store, cache } = setup();
    store.holding = true;
    // Ten new callers with room for all: each reply lets one more through; the rest wait again.
    const answers = Promise.all(Array.from({ length: 10 }, (_, i) => cache.schedule('q', T0, caller(i), ROOM)));
    const inFlight: number[] = [];
    while (store.calls.length < 10 || store.held.length > 0) {
      await settled();
      inFlight.push(store.held.length);
      await store.deliver();
    }
    // Rounds 1–8: one call each. After the 8th reply the two callers still waiting have waited 8 times and both go.
    expect(inFlight).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 2, 1]);
    expect((await answers).map((a) => a.outcome.status)).toEqual(['run', ...Array(9).fill('reserved')]);
  });
});

describe('CachedUpstreamQuota: store errors', () => {
  test('a store error reaches the caller, counts as forwarded, and leaves the cached state as it was', async () => {
    const { store, cache } = setup({ maxStalenessMs: 250 });
    await fillQueue(cache);
    store.fail = new Error('store down');
    await expect(cache.schedule('q', T0 + 300, caller(3), QUEUE)).rejects.toThrow('store down');
    store.fail = undefined;
    expect(cache.stats).toEqual({ answeredLocally: 0, forwarded: 4 });
    // Still the state from T0: 250 ms after it answers, 251 does not.
    await cache.schedule('q', T0 + 250, caller(3), QUEUE);
    await cache.schedule('q', T0 + 251, caller(3), QUEUE);
    expect(cache.stats).toEqual({ answeredLocally: 1, forwarded: 5 });
  });

  test('callers waiting on a call that fails ask the store themselves rather than answer from the stale state', async () => {
    const { store, cache } = setup({ maxStalenessMs: 250 });
    await fillQueue(cache);
    store.holding = true;
    store.fail = new Error('store down');
    const failing = cache.schedule('q', T0 + 300, caller(3), QUEUE).catch((error: unknown) => error);
    store.fail = undefined;
    const waiters = Promise.all([4, 5].map((i) => cache.schedule('q', T0 + 300, caller(i), QUEUE)));
    await settled();
    expect(store.held).toHaveLength(1);
    await store.deliver();
    expect(await failing).toEqual(new Error('store down'));
    expect(store.held).toHaveLength(2);
    while (store.held.length > 0) await store.deliver();
    expect((await waiters).map((a) => a.outcome.status)).toEqual(['rejected', 'rejected']);
    expect(cache.stats).toEqual({ answeredLocally: 0, forwarded: 6 });
  });

  test('after a failed call, the next cold flood again sends one call', async () => {
    const { store, cache } = setup();
    store.fail = new Error('store down');
    await expect(cache.schedule('q', T0, caller(0), QUEUE)).rejects.toThrow('store down');
    store.fail = undefined;
    store.holding = true;
    const answers = Promise.all([1, 2].map((i) => cache.schedule('q', T0, caller(i), NO_WAIT)));
    await settled();
    expect(store.held).toHaveLength(1);
    await store.deliver();
    expect((await answers).map((a) => a.outcome.status)).toEqual(['run', 'rejected']);
  });
});

// ---------------------------------------------------------------- properties

const policyArb: fc.Arbitrary<UpstreamPolicy> = fc.record({
  limit: fc.integer({ min: 1, max: 5 }),
  windowMs: fc.constantFrom(1000, 7000),
  headroomBp: fc.constantFrom(10_000, 9000),
  maxWaitMs: fc.integer({ min: 0, max: 20_000 }),
  dailyBudget: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 6 })),
  graceMs: fc.integer({ min: 0, max: 2000 }),
  maxReservations: fc.integer({ min: 1, max: 3 }),
  // One per holder: the timeline below follows one slot per caller.
  maxReservationsPerHolder: fc.constant(1),
});

/**
 * One call: who, on which key, through which instance, and when: `back`
 * returns to the caller's own slot (if it was told one) `latenessMs` after it,
 * otherwise the clock moves by `stepMs`. The clock never goes back.
 */
const opArb = fc.record({
  who: fc.integer({ min: 0, max: 5 }),
  key: fc.constantFrom('a', 'b'),
  instance: fc.constantFrom(0, 1),
  back: fc.boolean(),
  latenessMs: fc.integer({ min: -500, max: 3000 }),
  stepMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1500 }), fc.integer({ min: 1501, max: 90_000 })),
});
const opsArb = fc.array(opArb, { minLength: 1, maxLength: 30 });
const startArb = fc.oneof(fc.constant(T0), fc.integer({ min: 1_700_006_400_000 - 30_000, max: 1_700_006_400_000 })); // near a UTC midnight too

/** The clock and what each caller was told, across the calls of one sequence. */
class Timeline {
  private clockMs: number;
  private readonly told = new Map<string, number>();
  constructor(startMs: number) {
    this.clockMs = startMs;
  }
  slotOf(key: string, who: number): number | undefined {
    return this.told.get(`${key}/${who}`);
  }
  next(op: { key: string; who: number; back: boolean; latenessMs: number; stepMs: number }): number {
    const held = this.slotOf(op.key, op.who);
    this.clockMs = op.back && held !== undefined ? Math.max(this.clockMs, held + op.latenessMs) : this.clockMs + op.stepMs;
    return this.clockMs;
  }
  heard(key: string, who: number, outcome: { status: string; slotAtMs?: number }): void {
    if (outcome.status === 'reserved') this.told.set(`${key}/${who}`, outcome.slotAtMs as number);
    if (outcome.status === 'run') this.told.delete(`${key}/${who}`);
  }
}

describe('CachedUpstreamQuota: properties', () => {
  test('on one instance, the cache answers every call exactly as the store alone would, and locally exactly the calls that write nothing within the staleness of the last store reply on the key', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, startArb, opsArb, fc.constantFrom(0, 1, 700, 1000, 60_000), fc.constantFrom(1, 2), async (policy, startMs, ops, maxStalenessMs, maxKeys) => {
        const { store, cache } = setup({ maxStalenessMs, maxKeys });
        const alone = new MemoryUpstreamQuotaStore();
        const timeline = new Timeline(startMs);
        const lastReplyMs = new Map<string, number>(); // recency order, as the cache keeps it
        for (const op of ops) {
          const nowMs = timeline.next(op);
          const aloneBefore = alone.peek(op.key);
          const expected = alone.scheduleSync(op.key, nowMs, caller(op.who), policy);
          const wrote = alone.peek(op.key) !== aloneBefore;
          const seenMs = lastReplyMs.get(op.key);
          const local = maxStalenessMs > 0 && seenMs !== undefined && nowMs - seenMs <= maxStalenessMs && !wrote;
          const calls = store.calls.length;
          expect(await cache.schedule(op.key, nowMs, caller(op.who), policy)).toEqual(expected);
          expect({ local: store.calls.length === calls }).toEqual({ local });
          if (!local) {
            lastReplyMs.delete(op.key);
            lastReplyMs.set(op.key, nowMs);
            while (lastReplyMs.size > maxKeys) lastReplyMs.delete(lastReplyMs.keys().next().value as string);
          }
          timeline.heard(op.key, op.who, expected.outcome);
        }
      }),
      { numRuns: fcNumRuns(300) },
    );
  });

  test('on two instances: a local answer is never a run and never writes, a local reservation is the one the store holds, a local wait rejection is a rejection on the store too, and a holder back on time runs on its claim', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, startArb, opsArb, fc.constantFrom(1, 700, 1000, 60_000), async (policy, startMs, ops, maxStalenessMs) => {
        const store = new HeldReplyStore();
        const instances = [new CachedUpstreamQuota({ store, maxStalenessMs }), new CachedUpstreamQuota({ store, maxStalenessMs })];
        const timeline = new Timeline(startMs);
        for (const op of ops) {
          const nowMs = timeline.next(op);
          const slot = timeline.slotOf(op.key, op.who);
          const before = store.memory.peek(op.key);
          const calls = store.calls.length;
          const { outcome } = await (instances[op.instance] as CachedUpstreamQuota).schedule(op.key, nowMs, caller(op.who), policy);
          if (slot !== undefined && nowMs >= slot && nowMs <= slot + policy.graceMs) expect(outcome).toEqual({ status: 'run', claimed: true, slotAtMs: slot });
          if (store.calls.length === calls) {
            expect(outcome.status).not.toBe('run');
            expect(store.memory.peek(op.key)).toBe(before);
            if (outcome.status === 'reserved') expect(before?.reservations).toContainEqual({ holder: holderIdOf(caller(op.who)), slotAtMs: outcome.slotAtMs });
            const holdsNothing = slot === undefined || nowMs > slot + policy.graceMs;
            if (outcome.status === 'rejected' && outcome.reason === 'max_wait' && holdsNothing) {
              expect(scheduleUpstream(before, nowMs, holderIdOf(caller(op.who)), policy).outcome.status).toBe('rejected');
            }
          }
          timeline.heard(op.key, op.who, outcome);
        }
      }),
      { numRuns: fcNumRuns(300) },
    );
  });
});
