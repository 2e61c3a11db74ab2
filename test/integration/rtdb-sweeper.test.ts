import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { App } from 'firebase-admin/app';
import { getDatabase, type Database } from 'firebase-admin/database';
import { loadConfig } from '../../src/config/config';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import { encodeKeyPart } from '../../src/library/window/key';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { RtdbWindowStore, type RtdbWindowStoreOptions } from '../../src/library/backends/rtdb/rtdb-store';
import { DEFAULT_SWEEP_BATCH_SIZE, DEFAULT_SWEEP_GRACE_MS, DEFAULT_SWEEP_MAX_BATCHES, RtdbSweeper } from '../../src/library/backends/rtdb/rtdb-sweeper';
import { createLimitStore } from '../../src/service/create-limit-store';
import { silentLogger } from '../../src/shared/logger';
import { createCapturingLogger } from '../support/capturing-logger';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';

const WINDOW_MS = 60_000;
const POLICY: RateLimitPolicy = { name: 'auth-failures', limit: 5, windowMs: WINDOW_MS };
/** The default layout: a set of exactly one fixed-window policy. */
const SET: PolicySet = [POLICY];
/** A realistic epoch, so window numbers are large. */
const WINDOW = 29_600_000;
const at = (windowNumber: number, offsetMs = 0): number => windowNumber * WINDOW_MS + offsetMs;
const node = (windowNumber: number, count: number): Record<string, number> => ({ [windowNumber]: count, e: at(windowNumber + 1) });
/**
 * Every test uses its own root; these rules index `e` on every root as
 * database.rules.json does on rateLimits and authFailures, so the server
 * filters the sweeper's query as production does.
 */
const INDEXED_RULES = { rules: { '.read': false, '.write': false, $root: { '.indexOn': ['e'] } } };
/** A sweeper clock at which nodes of WINDOW are past their grace, and nodes of WINDOW + 3 are live. */
const SWEEP_AT = at(WINDOW + 3);

let server: RtdbTestServer;
let app: App;
let otherApp: App;
let database: Database;
let otherDatabase: Database;
const stores: RtdbWindowStore[] = [];
let rootSeq = 0;

function newRoot(): string {
  return `authFailures${++rootSeq}`;
}

/** A store whose sweeper runs only when the test calls sweepOnce(), at the test's clock. */
function newStore(root: string, options: Partial<RtdbWindowStoreOptions> & { now?: () => number } = {}): RtdbWindowStore {
  const { now = () => SWEEP_AT, ...rest } = options;
  const store = new RtdbWindowStore({ database, rootPath: root, sweepIntervalMs: 0, clock: now, ...rest });
  stores.push(store);
  return store;
}

/** Writes many nodes in one update, as many failed sign-ins from different addresses would have. */
async function seed(root: string, nodes: Record<string, unknown>): Promise<void> {
  await otherDatabase.ref(root).update(nodes);
}

/** The keys the auth middleware writes: `addr:` and the encoded address. */
const addr = (address: string): string => `addr:${encodeKeyPart(address)}`;

function addresses(count: number, prefix = '10.0'): string[] {
  return Array.from({ length: count }, (_, i) => addr(`${prefix}.${Math.floor(i / 256)}.${i % 256}`));
}

beforeAll(async () => {
  server = await rtdbForTests({ rules: INDEXED_RULES });
  app = createAdminApp(server);
  otherApp = createAdminApp(server);
  database = getDatabase(app);
  otherDatabase = getDatabase(otherApp);
});

afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

afterAll(async () => {
  await deleteAdminApp(app);
  await deleteAdminApp(otherApp);
  await server.close();
});

describe('the sweeper removes keys whose windows have passed', () => {
  test('a key idle past its window and the grace is gone after a sweep; live and in-grace keys stay', async () => {
    const root = newRoot();
    let now = at(WINDOW, 10);
    const store = newStore(root, { now: () => now });
    await store.consume(addr('1.2.3.4'), at(WINDOW, 10), SET, 1);
    await store.consume(addr('5.6.7.8'), at(WINDOW + 1, 10), SET, 1);
    await store.consume(addr('9.9.9.9'), at(WINDOW + 2, 10), SET, 1);

    // WINDOW ended at at(WINDOW + 1); one grace later it may go, not before.
    now = at(WINDOW + 1) + DEFAULT_SWEEP_GRACE_MS - 1;
    expect(await store.sweepOnce()).toMatchObject({ swept: 0, kept: 0, batches: 1 });
    now = at(WINDOW + 2) + DEFAULT_SWEEP_GRACE_MS;
    expect(await store.sweepOnce()).toMatchObject({ swept: 2, kept: 0, stamped: 0, batches: 1, backlog: false });

    expect(await server.read(root)).toEqual({ [addr('9.9.9.9')]: node(WINDOW + 2, 1) });
    expect(store.stats).toMatchObject({ keysSwept: 2, sweeps: 2 });
  });

  test('a swept key this store listens to counts from zero again', async () => {
    const root = newRoot();
    const store = newStore(root);
    for (let i = 0; i < 5; i++) await store.consume('addr:busy', at(WINDOW, i), SET, 1);
    expect(store.stats.listenedKeys).toBe(1);
    expect((await store.sweepOnce()).swept).toBe(1);
    expect(await server.read(`${root}/addr:busy`)).toBeNull();
    const again = await store.consume('addr:busy', SWEEP_AT, SET, 1);
    expect(again).toMatchObject({ allowed: true, decisions: [{ allowed: true, remaining: 4 }] });
    expect(await server.read(`${root}/addr:busy`)).toEqual(node(WINDOW + 3, 1));
  });

  test('a node written before e existed is stamped, then removed once the legacy TTL passes; junk goes at once', async () => {
    const root = newRoot();
    let now = SWEEP_AT;
    const store = newStore(root, { now: () => now, sweep: { legacyTtlMs: 10 * WINDOW_MS } });
    await seed(root, {
      'addr:old': { [WINDOW]: 3 },
      'addr:junk': { note: 'hand edit' },
      'addr:scalar': 7,
      'addr:fresh': node(WINDOW + 3, 1),
    });

    expect(await store.sweepOnce()).toMatchObject({ swept: 2, stamped: 1, kept: 0 });
    expect(await server.read(root)).toEqual({
      'addr:old': { [WINDOW]: 3, e: SWEEP_AT + 10 * WINDOW_MS },
      'addr:fresh': node(WINDOW + 3, 1),
    });
    // Stamped, it no longer comes back in every query.
    expect(await store.sweepOnce()).toMatchObject({ swept: 0, stamped: 0, kept: 0 });

    now = SWEEP_AT + 10 * WINDOW_MS + DEFAULT_SWEEP_GRACE_MS;
    expect(await store.sweepOnce()).toMatchObject({ swept: 2, stamped: 0 });
    expect(await server.read(root)).toBeNull();
  });
});

describe('a key written again during the sweep survives', () => {
  test.each([
    ['another instance', () => otherDatabase],
    ['the sweeping instance itself', () => database],
  ])('revived by %s between the query and the delete', async (_who, reviverDatabase) => {
    const root = newRoot();
    await seed(root, { 'addr:a': node(WINDOW, 5), 'addr:b': node(WINDOW, 2), 'addr:c': node(WINDOW, 1) });
    const reviver = new RtdbWindowStore({ database: reviverDatabase(), rootPath: root, sweepIntervalMs: 0 });
    stores.push(reviver);
    const store = newStore(root);
    // The gap a concurrent consume falls into: after the query said "dead", before the delete.
    const sweeper = new RtdbSweeper({
      database,
      rootPath: root,
      intervalMs: 0,
      clock: () => SWEEP_AT,
      afterQuery: async (keys) => {
        expect(keys).toEqual(['addr:a', 'addr:b', 'addr:c']);
        await reviver.consume('addr:b', SWEEP_AT, SET, 1);
      },
    });

    expect(await sweeper.sweepOnce()).toMatchObject({ swept: 2, kept: 1 });
    expect(await server.read(root)).toEqual({ 'addr:b': node(WINDOW + 3, 1) });
    // The revived key counts on, in its new window.
    expect(await store.consume('addr:b', SWEEP_AT + 1, SET, 1)).toMatchObject({ allowed: true, decisions: [{ allowed: true, remaining: 3 }] });
  });
});

describe('bounded work', () => {
  test('2,000 failed-sign-in nodes are removed in ceil(2000 / (batch × batches)) runs, with the default batch and batches', async () => {
    const root = newRoot();
    const dead = addresses(2_000);
    const live = addresses(20, '192.168');
    await seed(root, {
      ...Object.fromEntries(dead.map((addr) => [addr, node(WINDOW, 1)])),
      ...Object.fromEntries(live.map((addr) => [addr, node(WINDOW + 3, 2)])),
    });
    const store = newStore(root);
    const perRun = DEFAULT_SWEEP_BATCH_SIZE * DEFAULT_SWEEP_MAX_BATCHES;
    expect(perRun).toBe(1_000);

    const started = performance.now();
    // A run that used all its batches says so (backlog): the timer then comes back after backlogDelayMs.
    expect(await store.sweepOnce()).toMatchObject({ swept: perRun, batches: DEFAULT_SWEEP_MAX_BATCHES, backlog: true });
    expect(await store.sweepOnce()).toMatchObject({ swept: perRun, batches: DEFAULT_SWEEP_MAX_BATCHES });
    const elapsedMs = performance.now() - started;
    if (process.env.SWEEP_TIMING) process.stdout.write(`swept 2,000 nodes in ${elapsedMs.toFixed(0)} ms over 2 runs\n`);

    expect(await store.sweepOnce()).toMatchObject({ swept: 0, batches: 1, backlog: false });
    const left = (await server.read(root)) as Record<string, unknown>;
    expect(Object.keys(left).sort()).toEqual([...live].sort());
  });

  test('without the index (the server sends the whole root) a run still takes only due keys, a batch per query', async () => {
    // Production without ".indexOn": the same answer, but every query downloads the root.
    const unindexed = await rtdbForTests({ rules: { rules: { '.read': false, '.write': false } } });
    const unindexedApp = createAdminApp(unindexed);
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const db = getDatabase(unindexedApp);
      const dead = addresses(50);
      const live = addresses(10, '192.168');
      await db.ref('authFailures').set({
        ...Object.fromEntries(dead.map((key) => [key, node(WINDOW, 1)])),
        ...Object.fromEntries(live.map((key) => [key, node(WINDOW + 3, 1)])),
      });
      const queried: number[] = [];
      const sweeper = new RtdbSweeper({
        database: db,
        rootPath: 'authFailures',
        intervalMs: 0,
        clock: () => SWEEP_AT,
        batchSize: 20,
        afterQuery: (keys) => {
          queried.push(keys.length);
        },
      });
      expect(await sweeper.sweepOnce()).toMatchObject({ swept: 50, kept: 0, batches: 3 });
      expect(queried).toEqual([20, 20, 10]);
      expect(Object.keys((await unindexed.read('authFailures')) as object).sort()).toEqual([...live].sort());
    } finally {
      warn.mockRestore();
      await deleteAdminApp(unindexedApp);
      await unindexed.close();
    }
  });

  test('the request path issues no query: only the sweeper does', async () => {
    const root = newRoot();
    const store = newStore(root);
    const queryProto = Object.getPrototypeOf(Object.getPrototypeOf(database.ref(root))) as Record<string, unknown>;
    const methods = ['orderByChild', 'orderByKey', 'orderByValue', 'orderByPriority', 'startAt', 'startAfter', 'endAt', 'endBefore', 'equalTo', 'limitToFirst', 'limitToLast', 'get', 'once'];
    const spies = methods.map((name) => {
      expect(typeof queryProto[name]).toBe('function');
      return jest.spyOn(queryProto as Record<string, () => unknown>, name);
    });
    try {
      for (let i = 0; i < 8; i++) await store.consume(`addr:${i % 3}`, at(WINDOW + 3, i), SET, 1);
      await store.consume('addr:0', at(WINDOW + 3, 9), SET, 0);
      await store.adjust('addr:1', at(WINDOW + 3, 10), SET, [{ atLeast: null, deltaUnits: -1 }]);
      expect(spies.map((spy) => spy.mock.calls.length)).toEqual(methods.map(() => 0));

      await store.sweepOnce();
      const byName = Object.fromEntries(methods.map((name, i) => [name, spies[i]?.mock.calls.length]));
      expect(byName).toMatchObject({ orderByChild: 1, endAt: 1, limitToFirst: 1, get: 1 });
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});

describe('several instances', () => {
  test('two stores sweeping one root at once, while keys are revived, lose nothing live and count each removal once', async () => {
    const root = newRoot();
    const dead = addresses(300);
    const live = addresses(100, '172.16');
    const revived = dead.filter((_, i) => i % 6 === 0); // 50 of them
    await seed(root, {
      ...Object.fromEntries(dead.map((addr) => [addr, node(WINDOW, 1)])),
      ...Object.fromEntries(live.map((addr) => [addr, node(WINDOW + 3, 2)])),
    });
    const one = newStore(root, { sweep: { batchSize: 50 } });
    const two = new RtdbWindowStore({ database: otherDatabase, rootPath: root, sweepIntervalMs: 0, clock: () => SWEEP_AT, sweep: { batchSize: 50 } });
    stores.push(two);

    const traffic = Promise.all([
      ...revived.map((addr, i) => (i % 2 === 0 ? one : two).consume(addr, SWEEP_AT, SET, 1)),
      ...live.map((addr, i) => (i % 2 === 0 ? two : one).consume(addr, at(WINDOW + 3, 1), SET, 1)),
    ]);
    const [a, b] = await Promise.all([one.sweepOnce(), two.sweepOnce(), traffic]);
    // Whatever the first runs left (backlog, or keys they saw revived), later runs finish.
    for (let i = 0; i < 4; i++) await Promise.all([one.sweepOnce(), two.sweepOnce()]);

    const stored = (await server.read(root)) as Record<string, Record<string, number>>;
    for (const addr of live) expect(stored[addr]).toEqual(node(WINDOW + 3, 3));
    for (const addr of revived) expect(stored[addr]).toEqual(node(WINDOW + 3, 1));
    expect(Object.keys(stored)).toHaveLength(live.length + revived.length);
    // A delete that lost the race re-ran on "already gone" and is not counted again.
    expect(one.stats.keysSwept + two.stats.keysSwept).toBe(dead.length - revived.length);
    expect(a?.error).toBeUndefined();
    expect(b?.error).toBeUndefined();
  });
});

describe('failures', () => {
  test('a sweep that fails is logged once with class and code only, and never rejects', async () => {
    const rules = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'database.rules.json'), 'utf8')) as object;
    const locked = await rtdbForTests({ rules });
    // A client the rules apply to: every query is denied, as for a misconfigured service account.
    const userApp = createAdminApp(locked, { authOverride: { uid: 'not-the-admin' } });
    try {
      const logger = createCapturingLogger();
      const sweeper = new RtdbSweeper({ database: getDatabase(userApp), rootPath: 'authFailures', intervalMs: 0, clock: () => SWEEP_AT, logger });
      const first = await sweeper.sweepOnce();
      const second = await sweeper.sweepOnce();
      expect(first.error).toBeDefined();
      expect(second.error).toBe(first.error);
      expect(first.error).not.toMatch(/\s/); // a class:code, not a message
      expect(sweeper.stats).toMatchObject({ runs: 2, failedRuns: 2, swept: 0 });
      const failures = logger.entries.filter((entry) => entry.fields.event === 'ratelimit.sweep_failed');
      expect(failures).toHaveLength(1);
      expect(failures[0]?.fields).toMatchObject({ backend: 'rtdb', root: 'authFailures', error: first.error });
    } finally {
      await deleteAdminApp(userApp);
      await locked.close();
    }
  });

});

describe('options', () => {
  test.each([
    ['a negative interval', { sweepIntervalMs: -1 }, /sweepIntervalMs/],
    ['a non-finite interval', { sweepIntervalMs: Number.NaN }, /sweepIntervalMs/],
    ['a zero batch', { sweep: { batchSize: 0 } }, /batchSize/],
    ['a fractional batch count', { sweep: { maxBatchesPerRun: 1.5 } }, /maxBatchesPerRun/],
    ['a negative grace', { sweep: { graceMs: -5 } }, /graceMs/],
    ['a jitter of 1', { sweep: { jitter: 1 } }, /jitter/],
  ])('refuses %s instead of replacing it with a default', (_label, options, message) => {
    expect(() => newStore(newRoot(), options)).toThrow(message);
  });
});

describe('on the timer', () => {
  test('an expired key disappears without anyone calling sweepOnce, and close() stops it', async () => {
    const root = newRoot();
    await seed(root, { 'addr:timer': node(WINDOW, 1) });
    const store = newStore(root, { sweepIntervalMs: 20 });
    const deadline = Date.now() + 10_000;
    while ((await server.read(root)) !== null) {
      if (Date.now() > deadline) throw new Error('the timer never swept');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(store.stats.keysSwept).toBe(1);
    await store.close();
    await store.sweepOnce(); // lets a run the timer had started finish
    // Stopped: no run issues a query any more, so a new expired key stays.
    await seed(root, { 'addr:after-close': node(WINDOW, 1) });
    expect(await store.sweepOnce()).toMatchObject({ swept: 0, batches: 0 });
    expect(await server.read(root)).toEqual({ 'addr:after-close': node(WINDOW, 1) });
  });

  test("the service's store (createLimitStore) gives the sweeper the limiter's clock", async () => {
    const root = newRoot();
    await seed(root, { [addr('10.1.1.1')]: node(WINDOW, 1), [addr('10.1.1.2')]: node(WINDOW + 3, 1) });
    // By the real clock (years after WINDOW + 3) both are dead; by the limiter's clock only the first is.
    const config = loadConfig({ RATE_LIMIT_BACKEND: 'rtdb', FIREBASE_DATABASE_URL: server.databaseUrl });
    const store = await createLimitStore(config, app, { namespace: root, logger: silentLogger, clock: () => SWEEP_AT });
    expect(store).toBeInstanceOf(RtdbWindowStore);
    const limiter = await createRateLimiter({ store, policy: POLICY, clock: () => SWEEP_AT });
    try {
      expect(await (store as RtdbWindowStore).sweepOnce()).toMatchObject({ swept: 1 });
      expect(await server.read(root)).toEqual({ [addr('10.1.1.2')]: node(WINDOW + 3, 1) });
    } finally {
      await limiter.close();
    }
  });
});
