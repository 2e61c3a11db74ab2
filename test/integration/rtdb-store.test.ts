import type { App } from 'firebase-admin/app';
import { getDatabase, type Database } from 'firebase-admin/database';
import { windowNumberAt } from '../../src/library/window/fixed-window';
import { DeadlineGuard } from '../support/deadline-guard';
import { InvalidKeyError } from '../../src/library/window/key';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { WindowRateLimiter } from '../../src/library/limiter/rate-limiter';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { silentLogger } from '../../src/shared/logger';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';
import { only } from '../support/only-decision';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';

const WINDOW_MS = 60_000;
const POLICY: RateLimitPolicy = { name: 'test', limit: 3, windowMs: WINDOW_MS };
/** The default layout: a set of exactly one fixed-window policy. */
const SET: PolicySet = [POLICY];
/** A realistic epoch, so window numbers are large (small integer keys come back from RTDB as arrays). */
const WINDOW = 28_333_000;
const at = (windowNumber: number, offsetMs = 0): number => windowNumber * WINDOW_MS + offsetMs;
/** The stored node of a key holding `count` in `windowNumber`: the window and its end as `e`. */
const node = (windowNumber: number, count: number): Record<string, number> => ({ [windowNumber]: count, e: at(windowNumber + 1) });

let server: RtdbTestServer;
let app: App;
let database: Database;
let otherApp: App;
const stores: RtdbWindowStore[] = [];
let rootSeq = 0;

/** A store on its own root, so tests never see each other's keys. */
function newStore(options: Partial<ConstructorParameters<typeof RtdbWindowStore>[0]> = {}): { store: RtdbWindowStore; root: string } {
  const root = `limits${++rootSeq}`;
  const store = new RtdbWindowStore({ database, rootPath: root, ...options });
  stores.push(store);
  return { store, root };
}

beforeAll(async () => {
  server = await rtdbForTests();
  app = createAdminApp(server);
  database = getDatabase(app);
  otherApp = createAdminApp(server);
});

afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

afterAll(async () => {
  await deleteAdminApp(app);
  await deleteAdminApp(otherApp);
  await server.close();
});

describe('RtdbWindowStore against a real RTDB server', () => {
  test('allows up to the limit, then refuses, with remaining and reset from the window', async () => {
    const { store, root } = newStore();
    const now = at(WINDOW, 15_000);
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push(only(await store.consume('tok_1', now, SET, 1)));

    expect(seen.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(seen.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0]);
    for (const d of seen) expect(d.resetAtMs).toBe(at(WINDOW + 1));
    expect(seen[0]?.retryAfterMs).toBe(0);
    expect(seen[3]?.retryAfterMs).toBe(45_000);
    expect(await server.read(`${root}/tok_1`)).toEqual(node(WINDOW, 3));
  });

  test('a cost above what is left is refused and spends nothing', async () => {
    const { store, root } = newStore();
    const now = at(WINDOW);
    expect(only(await store.consume('k', now, SET, 2)).remaining).toBe(1);
    const refused = only(await store.consume('k', now, SET, 2));
    expect(refused).toMatchObject({ allowed: false, remaining: 1 });
    expect(only(await store.consume('k', now, SET, 1)).allowed).toBe(true);
    expect(await server.read(`${root}/k`)).toEqual(node(WINDOW, 3));
  });

  test.each([
    ['a.b', 'a.b'],
    ['a/b', 'a/b'],
    ['$', '$'],
    ['#', '#'],
    ['[', '['],
    [']', ']'],
    ['empty', ''],
    ['600 bytes', 'x'.repeat(600)],
  ])('refuses the invalid key %s and writes nothing', async (_label, key) => {
    const { store, root } = newStore();
    await expect(store.consume(key, at(WINDOW), SET, 1)).rejects.toBeInstanceOf(InvalidKeyError);
    expect(await server.read(root)).toBeNull();
    expect(store.transactionsStarted).toBe(0);
  });

  test('concurrent consumes on one client allow exactly the limit', async () => {
    const { store, root } = newStore();
    const policies: PolicySet = [{ ...POLICY, limit: 7 }];
    const decisions = await Promise.all(Array.from({ length: 25 }, () => store.consume('burst', at(WINDOW), policies, 1)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(7);
    expect(await server.read(`${root}/burst`)).toEqual(node(WINDOW, 7));
  });

  test('a cold client (no cached value) never answers from its empty cache', async () => {
    const { store: writer, root } = newStore();
    for (let i = 0; i < 3; i++) await writer.consume('cold', at(WINDOW), SET, 1);
    // Another client, cache off: its transaction's first run sees null.
    const cold = new RtdbWindowStore({ database: getDatabase(otherApp), rootPath: root, maxListenedKeys: 0 });
    stores.push(cold);

    const status = only(await cold.consume('cold', at(WINDOW, 1), SET, 0));
    expect(status).toMatchObject({ allowed: true, remaining: 0 });
    const hit = only(await cold.consume('cold', at(WINDOW, 2), SET, 1));
    expect(hit).toMatchObject({ allowed: false, remaining: 0 });
    const tooBig = only(await cold.consume('cold', at(WINDOW, 3), SET, 5));
    expect(tooBig).toMatchObject({ allowed: false, remaining: 0 });
    expect(await server.read(`${root}/cold`)).toEqual(node(WINDOW, 3));
    // Each of the three had to be confirmed by the server, not decided on the empty cache.
    expect(cold.stats.confirmingWrites).toBe(3);
  });

  test('a status read (cost 0) writes nothing new', async () => {
    const { store, root } = newStore();
    await store.consume('status', at(WINDOW), SET, 1);
    const read = only(await store.consume('status', at(WINDOW, 10), SET, 0));
    expect(read).toMatchObject({ allowed: true, remaining: 2 });
    expect(await server.read(`${root}/status`)).toEqual(node(WINDOW, 1));
  });
});

describe('every write carries its expiry', () => {
  test('adjust() writes the window with its end as e, like consume()', async () => {
    const { store, root } = newStore();
    await store.consume('adj', at(WINDOW, 5), SET, 1);
    await store.adjust('adj', at(WINDOW, 6), SET, [{ atLeast: { windowNumber: WINDOW, count: 2 }, deltaUnits: -1 }]);
    expect(await server.read(`${root}/adj`)).toEqual(node(WINDOW, 1));
  });

  test('a node written before e existed gets e on its next write', async () => {
    const { store, root } = newStore();
    await getDatabase(otherApp).ref(`${root}/old`).set({ [WINDOW]: 1 });
    expect(only(await store.consume('old', at(WINDOW, 7), SET, 1))).toMatchObject({ allowed: true, remaining: 1 });
    expect(await server.read(`${root}/old`)).toEqual(node(WINDOW, 2));
  });
});

describe('pruning old windows', () => {
  const windowsHeld = async (path: string): Promise<number[]> =>
    Object.keys(((await server.read(path)) as Record<string, number> | null) ?? {})
      .filter((key) => key !== 'e')
      .map(Number);

  test('windows N and N+1: at most two nodes; N+2 removes N', async () => {
    const { store, root } = newStore();
    const path = `${root}/prune`;
    await store.consume('prune', at(WINDOW, 1), SET, 1);
    await store.consume('prune', at(WINDOW, 2), SET, 1);
    expect(await windowsHeld(path)).toEqual([WINDOW]);

    await store.consume('prune', at(WINDOW + 1, 1), SET, 1);
    const afterNext = await windowsHeld(path);
    expect(afterNext.length).toBeLessThanOrEqual(2);
    expect(afterNext).toContain(WINDOW + 1);

    await store.consume('prune', at(WINDOW + 2, 1), SET, 1);
    const afterTwo = await windowsHeld(path);
    expect(afterTwo).not.toContain(WINDOW);
    expect(afterTwo).toContain(WINDOW + 2);
    expect(await server.read(path)).toEqual(node(WINDOW + 2, 1));
  });

  test('an idle gap: hits in N then N+5 leave nothing older than N+4', async () => {
    const { store, root } = newStore();
    await store.consume('gap', at(WINDOW), SET, 3);
    const later = only(await store.consume('gap', at(WINDOW + 5, 7), SET, 1));
    expect(later).toMatchObject({ allowed: true, remaining: 2, resetAtMs: at(WINDOW + 6) });
    const held = await windowsHeld(`${root}/gap`);
    expect(held.every((w) => w >= WINDOW + 4)).toBe(true);
    expect(held).toEqual([WINDOW + 5]);
  });

  test('a node with junk children is read by its newest window and cleaned on the next write', async () => {
    const { store, root } = newStore();
    await getDatabase(otherApp)
      .ref(`${root}/junk`)
      .set({ [WINDOW - 3]: 99, [WINDOW]: 1, note: 'hand edit', [WINDOW - 1]: 'x' });
    const d = only(await store.consume('junk', at(WINDOW), SET, 1));
    expect(d).toMatchObject({ allowed: true, remaining: 1 });
    expect(await server.read(`${root}/junk`)).toEqual(node(WINDOW, 2));
  });

  test('windowNumberAt agrees with the node key written', async () => {
    const { store, root } = newStore();
    const now = 1_700_000_123_456;
    await store.consume('epoch', now, SET, 1);
    expect(await server.read(`${root}/epoch`)).toEqual(node(windowNumberAt(now, WINDOW_MS), 1));
  });
});

describe('an over-limit key costs no write', () => {
  test('after a shared refusal, the rest of the window runs no transaction', async () => {
    const { store } = newStore();
    let now = at(WINDOW, 1_000);
    const limiter = new WindowRateLimiter({
      store,
      guard: new DeadlineGuard({ backend: 'rtdb', timeoutMs: 10_000, logger: silentLogger }),
      policies: SET,
      failurePolicy: 'fail-open',
      clock: () => now,
      logger: silentLogger,
    });
    for (let i = 0; i < 3; i++) expect((await limiter.consume('busy')).allowed).toBe(true);
    const refusal = await limiter.consume('busy');
    expect(refusal).toMatchObject({ allowed: false, shared: true, reason: 'limit' });
    const afterRefusal = store.transactionsStarted;
    expect(afterRefusal).toBe(4);

    for (let i = 0; i < 20; i++) {
      now += 1_000;
      const d = await limiter.consume('busy');
      expect(d).toMatchObject({ allowed: false, shared: true, resetAtMs: at(WINDOW + 1) });
    }
    expect(store.transactionsStarted).toBe(afterRefusal);
    // A refusal on a view that tracks the server is not written back either.
    expect(store.stats.confirmingWrites).toBe(0);

    now = at(WINDOW + 1, 5);
    expect((await limiter.consume('busy')).allowed).toBe(true);
    expect(store.transactionsStarted).toBe(afterRefusal + 1);
  });
});

describe('listener cache', () => {
  test('keeps a bounded number of listened keys and drops idle ones', async () => {
    const { store } = newStore({ maxListenedKeys: 3, listenerIdleWindows: 2 });
    for (const key of ['a', 'b', 'c', 'd']) await store.consume(key, at(WINDOW), SET, 1);
    expect(store.stats.listenedKeys).toBe(3);
    // Two windows later every one of them has been idle long enough.
    await store.consume('e', at(WINDOW + 2, 1), SET, 1);
    expect(store.stats.listenedKeys).toBe(1);
    await store.close();
    expect(store.stats.listenedKeys).toBe(0);
  });
});

describe('other algorithms and policy sets: one compact string per policy, decided all or nothing', () => {
  // A 60 s boundary is also a 1 s and a 10 s boundary: every window below starts at T.
  const T = at(WINDOW);

  test('a token bucket is stored as { "token-bucket:<windowMs>": "scaledTokens:updatedAtMs", e: when full }', async () => {
    const { store, root } = newStore();
    // 2 tokens per 10 s, 3 at once: a token is 5 s of refill.
    const bucket: PolicySet = [{ name: 'bucket', algorithm: 'token-bucket', limit: 2, windowMs: 10_000, burst: 3 }];
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(only(await store.consume('tb', T, bucket, 1)));
    expect(seen).toEqual([
      { allowed: true, limit: 3, remaining: 2, resetAtMs: T + 5_000, retryAfterMs: 0 },
      { allowed: true, limit: 3, remaining: 1, resetAtMs: T + 10_000, retryAfterMs: 0 },
      { allowed: true, limit: 3, remaining: 0, resetAtMs: T + 15_000, retryAfterMs: 0 },
      { allowed: false, limit: 3, remaining: 0, resetAtMs: T + 15_000, retryAfterMs: 5_000 },
    ]);
    // Tokens × windowMs: an empty bucket is 0; `e` is when it is full again.
    expect(await server.read(`${root}/tb`)).toEqual({ 'token-bucket:10000': `0:${T}`, e: T + 15_000 });

    // One token back after 5 s, spent at once: the refill is stored as of that call.
    expect(only(await store.consume('tb', T + 5_000, bucket, 1))).toMatchObject({ allowed: true, remaining: 0 });
    expect(await server.read(`${root}/tb`)).toEqual({ 'token-bucket:10000': `0:${T + 5_000}`, e: T + 20_000 });
  });

  test('fixed window 3/1 s + sliding window 5/60 s: one child per policy, and a refusal by either charges neither', async () => {
    const { store, root } = newStore();
    const policies: PolicySet = [
      { name: 'burst', algorithm: 'fixed-window', limit: 3, windowMs: 1_000 },
      { name: 'minute', algorithm: 'sliding-window', limit: 5, windowMs: 60_000 },
    ];
    const second = T / 1_000;
    const path = `${root}/pair`;
    const pairNode = (fw: string, sw: string, e: number) => ({ 'fixed-window:1000': fw, 'sliding-window:60000': sw, e });

    for (let i = 0; i < 3; i++) expect((await store.consume('pair', T, policies, 1)).allowed).toBe(true);
    expect(await server.read(path)).toEqual(pairNode(`${second}:3`, `${WINDOW}:3:0`, at(WINDOW + 2)));

    // The burst policy refuses; the minute policy would allow, and is not charged: it reports 2 still left.
    const byBurst = await store.consume('pair', T, policies, 1);
    expect(byBurst.allowed).toBe(false);
    expect(byBurst.decisions).toEqual([
      { allowed: false, limit: 3, remaining: 0, resetAtMs: T + 1_000, retryAfterMs: 1_000 },
      { allowed: true, limit: 5, remaining: 2, resetAtMs: at(WINDOW + 2), retryAfterMs: 0 },
    ]);
    expect(byBurst.states).toEqual([
      { windowNumber: second, count: 3 },
      { windowNumber: WINDOW, count: 3, previousCount: 0 },
    ]);
    expect(await server.read(path)).toEqual(pairNode(`${second}:3`, `${WINDOW}:3:0`, at(WINDOW + 2)));

    // A second later the burst window is fresh: two more spend the minute's budget.
    for (let i = 0; i < 2; i++) expect((await store.consume('pair', T + 1_000, policies, 1)).allowed).toBe(true);
    expect(await server.read(path)).toEqual(pairNode(`${second + 1}:2`, `${WINDOW}:5:0`, at(WINDOW + 2)));

    // Now the minute policy refuses; the burst policy would allow (1 left) and is not charged.
    const byMinute = await store.consume('pair', T + 1_000, policies, 1);
    expect(byMinute.allowed).toBe(false);
    expect(byMinute.decisions).toEqual([
      { allowed: true, limit: 3, remaining: 1, resetAtMs: T + 2_000, retryAfterMs: 0 },
      // The earliest fit: 12 s into the next minute, when the 5 spent weigh 4.
      { allowed: false, limit: 5, remaining: 0, resetAtMs: at(WINDOW + 2), retryAfterMs: 71_000 },
    ]);
    expect(await server.read(path)).toEqual(pairNode(`${second + 1}:2`, `${WINDOW}:5:0`, at(WINDOW + 2)));
  });
});
