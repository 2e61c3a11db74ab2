import { stateSlotOf, type PolicySet } from '../../src/library/window/policy';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import type { LimitStore } from '../../src/library/limiter/limit-store';
import { BASE_MS, CASES, freshKey, observed, Reference, SETS, startBackends, TRIO, type Backend, type Backends, type ContractBackend } from '../support/store-contract';
import { reportSqliteSkipped, withSqlite } from '../support/sqlite-runtime';

// The store contract, part two: a policy set is charged all or nothing on
// every store; concurrent calls from two clients on one key admit exactly
// what the pure algorithm admits for that many calls; a refund through a
// client that never saw the key still lands; junk stored by hand reads as
// empty. Times are injected; nothing sleeps.

let backends: Backends;
beforeAll(async () => {
  backends = await startBackends();
});
afterAll(async () => {
  await backends?.close();
});
const backend = (label: ContractBackend): Backend => backends.all.find((b) => b.label === label) as Backend;
const ALL_SETS = [...CASES, ...SETS];
const EVERY = withSqlite(['memory', 'rtdb', 'redis', 'redis-cluster'] as const);
const SHARED = withSqlite(['rtdb', 'redis', 'redis-cluster'] as const);
reportSqliteSkipped('the store contract (sets, two clients, junk)');

describe.each(EVERY)('the %s store', (name) => {
  // TRIO: burst 3 refilled 1 per 2 s, 5 per clock minute, 4 in any 10 s. Each refusal below is by one policy alone.
  const t0 = BASE_MS + 1000;
  const script: readonly (readonly [number, number, string | null])[] = [
    [t0, 3, null],
    [t0, 1, 'burst'], // the bucket is empty; 4 of 5 and 4 of 4 would fit
    [t0 + 2000, 1, null],
    [t0 + 6000, 1, 'ten'], // two tokens back and the minute has room, but four are in the last 10 s
    [t0 + 11_000, 1, null], // the first three left the log
    [t0 + 11_000, 1, 'minute'], // the bucket and the log have room; the minute holds 5
  ];

  test('a call refused by any one policy of a three-policy set changes none of the three states, and the others report their budget unspent', async () => {
    const b = backend(name);
    const key = freshKey('trio');
    const reference = new Reference(TRIO);
    for (const [nowMs, cost, refuser] of script) {
      const expected = reference.consume(nowMs, cost);
      // The script itself: exactly the named policy refuses, and the others would have allowed.
      expect(expected.decisions.map((d, i) => (d.allowed ? null : TRIO[i]?.name))).toEqual(TRIO.map((p) => (p.name === refuser ? refuser : null)));
      const before = await b.raw(key, TRIO);
      expect(observed(await b.store.consume(key, nowMs, TRIO, cost), TRIO, nowMs)).toEqual(expected);
      if (refuser !== null) expect(await b.raw(key, TRIO)).toEqual(before);
      else expect(await b.raw(key, TRIO)).not.toEqual(before);
    }
  });

  // Found by the interleaved property of store-contract.test.ts (seed search): the memory store's generations
  // were re-cut on a grid of a rotation a later write had lengthened, and a live count was dropped.
  test('a live count survives another key lengthening how long the store keeps states', async () => {
    // Fresh for memory: its generations are store-wide, and earlier tests would have sized them differently.
    const store = name === 'memory' ? new MemoryWindowStore() : backend(name).store;
    const [fiveAlgorithms, slidingWindow, fixedWindow] = [SETS[1]?.[1], CASES[1]?.[1], CASES[0]?.[1]] as [PolicySet, PolicySet, PolicySet];
    const calls: readonly (readonly [PolicySet, number, number])[] = [
      [fiveAlgorithms, 39_144, 1],
      [slidingWindow, 41_180, 1],
      ...[51_511, 53_266, 53_587, 57_134].map((at) => [fixedWindow, at, 0] as const),
      [slidingWindow, 58_440, 0], // 1.5 s before the sliding window's count expires
    ];
    const lanes = new Map(calls.map(([set]) => [set, { key: freshKey('rot'), reference: new Reference(set) }]));
    for (const [set, offsetMs, cost] of calls) {
      const lane = lanes.get(set) as { key: string; reference: Reference };
      const nowMs = BASE_MS + offsetMs;
      expect(observed(await store.consume(lane.key, nowMs, set, cost), set, nowMs)).toEqual(lane.reference.consume(nowMs, cost));
    }
  });
});

/** The sets a hot-key lease may take from (ADR 0066: fixed windows only). */
const LEASABLE: readonly (readonly [string, PolicySet])[] = [
  ['fixed-window', CASES[0]?.[1] as PolicySet],
  ['two fixed windows', [{ name: 'ten', algorithm: 'fixed-window', limit: 5, windowMs: 10_000 }, { name: 'minute', algorithm: 'fixed-window', limit: 8, windowMs: 60_000 }]],
];

describe.each(EVERY)('a hot-key lease on the %s store', (name) => {
  // A lease is a consume of cost = share; giving back what it did not spend is an adjust of -unspent, later in the window.
  const rows = LEASABLE.flatMap(([label, policies]) => [0, 3].map((spent) => ({ label, policies, share: 4, spent })));
  test.each(rows)('$label: a take of $share units of which $spent were spent, the rest given back, leaves the count that much above where it was', async ({ policies, share, spent }) => {
    const b = backend(name);
    const key = freshKey('lease');
    const takeMs = BASE_MS + 1000;
    const giveBackMs = takeMs + 500;
    await b.store.consume(key, takeMs, policies, 1);
    const before = observed(await b.store.consume(key, takeMs, policies, 0), policies, takeMs).decisions.map((d) => d.remaining);
    const take = await b.store.consume(key, takeMs, policies, share);
    expect(take.allowed).toBe(true);
    expect(take.decisions.map((d) => d.remaining)).toEqual(before.map((remaining) => remaining - share));
    await b.store.adjust(key, giveBackMs, policies, policies.map(() => ({ atLeast: null, deltaUnits: -(share - spent) })));
    // The stored states, and what a read there answers, are those of spending only `spent`.
    const reference = new Reference(policies);
    reference.consume(takeMs, 1 + spent);
    const expected = reference.consume(giveBackMs, 0);
    expect(await b.stored(key, policies, giveBackMs)).toEqual(expected.states);
    expect(observed(await b.store.consume(key, giveBackMs, policies, 0), policies, giveBackMs)).toEqual(expected);
    expect(expected.decisions.map((d) => d.remaining)).toEqual(before.map((remaining) => remaining - spent));
  });
});

describe.each(SHARED)('the shared %s store, two clients at once', (name) => {
  const N = 50;
  test.each(ALL_SETS)('%s: 50 concurrent calls at one instant admit exactly what 50 calls of the pure algorithm admit, and store its state', async (_, policies) => {
    const b = backend(name);
    const key = freshKey('burst');
    const nowMs = BASE_MS + 4321;
    const reference = new Reference(policies);
    const expected = Array.from({ length: N }, () => reference.consume(nowMs, 1));
    const results = await Promise.all(Array.from({ length: N }, (_, i) => (i % 2 === 0 ? b.store : b.other).consume(key, nowMs, policies, 1)));
    const admitted = results.filter((r) => r.allowed).length;
    expect(admitted).toBe(expected.filter((d) => d.allowed).length);
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThan(N);
    // Serialisable: the decisions are those of the reference's one order, as a multiset.
    const sorted = (list: readonly unknown[]): string[] => list.map((d) => JSON.stringify(d)).sort();
    expect(sorted(results.map((r) => observed(r, policies, nowMs).decisions))).toEqual(sorted(expected.map((d) => d.decisions)));
    expect(await b.stored(key, policies, nowMs)).toEqual(reference.consume(nowMs, 0).states);
  });

  test.each(ALL_SETS)('%s: a refund through the other client, whose view of the key is cold, reaches the stored state', async (_, policies) => {
    const b = backend(name);
    const key = freshKey('refund');
    const nowMs = BASE_MS + 1000;
    const reference = new Reference(policies);
    reference.consume(nowMs, 2);
    await b.store.consume(key, nowMs, policies, 2);
    const refund = policies.map(() => ({ atLeast: null, deltaUnits: -1 }));
    reference.adjust(nowMs, refund);
    await b.other.adjust(key, nowMs, policies, refund);
    // Read from the server: the first client's view may not have heard of the refund yet, and a cost-0 read may answer from it.
    expect(await b.stored(key, policies, nowMs)).toEqual(reference.consume(nowMs, 0).states);
  });

  test.each(ALL_SETS)('%s: an adjustment whose atLeast is not a state of its algorithm is refused and writes nothing', async (_, policies) => {
    const b = backend(name);
    const key = freshKey('badAtLeast');
    const nowMs = BASE_MS + 1000;
    const reference = new Reference(policies);
    reference.consume(nowMs, 1);
    await b.store.consume(key, nowMs, policies, 1);
    const bad = policies.map((_p, i) => (i === policies.length - 1 ? { atLeast: { nonsense: true }, deltaUnits: 1 } : { atLeast: null, deltaUnits: 1 }));
    await expect(b.store.adjust(key, nowMs, policies, bad)).rejects.toThrow(/atLeast .* is not a .* state/);
    expect(await b.stored(key, policies, nowMs)).toEqual(reference.consume(nowMs, 0).states);
  });
});

/** Hand-edited values, per policy (Redis values; RTDB slot children), that no store may read as a state. */
const JUNK_VALUES: readonly string[] = ['junk', '1:2:3:4:5', '-5:-5', '1.5:2', ':', '170000004:', 'NaN:NaN', '3,2,1', '1:0,1:0', '99999999999999999999:1', '1:99999999999999999999', '170000004:1:99999999999999999999', '-99999999999999999999:1700000041000'];
/** Whole RTDB nodes for the single fixed-window layout `{ [windowNumber]: count, e }`, the current window made junk. */
const JUNK_WINDOW_NODES: readonly unknown[] = ['a string', 42, true, { 170000004: -3 }, { 170000004: 1.5 }, { 170000004: 'x', e: 'soon' }, { '0170000004': 2 }];

describe.each(SHARED)('junk in the %s store', (name) => {
  const nowMs = BASE_MS + 1000;
  test.each(ALL_SETS)('%s: a hand-edited wrong value reads as empty and the call proceeds from nothing', async (_, policies) => {
    const b = backend(name);
    const expected = new Reference(policies).consume(nowMs, 1);
    const junk: unknown[] = JUNK_VALUES.map((value) => policies.map(() => value));
    if (name === 'rtdb') {
      junk.length = 0;
      for (const value of [...JUNK_VALUES, 5, { nested: 1 }]) junk.push({ e: nowMs + 1, ...Object.fromEntries(policies.map((p) => [stateSlotOf(p), value])) });
      if (policies.length === 1 && policies[0].algorithm === 'fixed-window') junk.push(...JUNK_WINDOW_NODES);
    }
    for (const value of junk) {
      const key = freshKey('junk');
      await b.poke(key, policies, value);
      expect({ value, read: observed(await b.store.consume(key, nowMs, policies, 1), policies, nowMs) }).toEqual({ value, read: expected });
    }
  });
});

// The memory store keeps a state DEFAULT_MEMORY_LAG_MARGIN_MS past its expiry (as Redis keeps a TTL
// margin and the RTDB sweeper a grace), so a call whose clock steps back behind that expiry, after a newer
// clock has passed it, is still answered from the count.
test('the memory store answers a clock that steps back behind an expiry a newer clock passed from the kept count', () => {
  const store = new MemoryWindowStore();
  const policies = CASES[0]?.[1] as PolicySet;
  const window = BASE_MS + 10_000; // [BASE_MS + 10 s, BASE_MS + 20 s)
  const reference = new Reference(policies);
  for (const [key, nowMs, cost] of [['k', window + 9400, 1], ['other', window + 10_700, 0], ['k', window + 9999, 0]] as const) {
    const expected = key === 'k' ? reference.consume(nowMs, cost) : undefined;
    const actual = observed(store.consumeSync(key, nowMs, policies, cost), policies, nowMs);
    if (expected !== undefined) expect(actual).toEqual(expected);
  }
});

describe.each(SHARED)('the fleet heartbeats of the %s store (ADR 0067)', (name) => {
  // Its own stretch of injected time per test, each far past the last one's TTL; a real TTL long enough
  // that Redis's expiry of the set (two TTLs, by the real clock) cannot fall inside a test.
  const TTL_MS = 600_000;
  let run = 0;
  const at = (offsetMs = 0): number => BASE_MS + 1_000_000_000 + (run * 100 + 10) * TTL_MS + offsetMs;
  beforeEach(() => {
    run++;
  });
  const beat = (store: Backend['store'], id: string, nowMs: number): Promise<number> => {
    if (store.heartbeat === undefined) throw new Error(`${name} keeps no heartbeats`);
    return store.heartbeat(id, nowMs, TTL_MS);
  };

  it('counts every instance that beat within the TTL, through either client, each once however often it beats', async () => {
    const { store, other } = backend(name);
    const [a, b, c] = [freshKey('i'), freshKey('i'), freshKey('i')];
    expect(await beat(store, a, at())).toBe(1);
    expect(await beat(other, b, at(1))).toBe(2);
    expect(await beat(store, a, at(2))).toBe(2);
    expect(await beat(other, c, at(3))).toBe(3);
  });

  it('no longer counts a beat older than the TTL', async () => {
    const { store, other } = backend(name);
    const [a, b] = [freshKey('i'), freshKey('i')];
    await beat(store, a, at());
    expect(await beat(other, b, at(TTL_MS))).toBe(2);
    expect(await beat(other, b, at(TTL_MS + 1))).toBe(1);
  });

  it('an instance that leaves is counted out at once', async () => {
    const { store, other } = backend(name);
    const [a, b] = [freshKey('i'), freshKey('i')];
    await beat(store, a, at());
    await beat(other, b, at(1));
    await other.leaveFleet?.(b);
    expect(await beat(store, a, at(2))).toBe(1);
  });
});

it('the memory store keeps no heartbeats: an instance alone is the whole fleet', () => {
  const store: LimitStore = new MemoryWindowStore();
  expect(store.heartbeat).toBeUndefined();
});
