import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { App } from 'firebase-admin/app';
import { getDatabase, ServerValue, type Database, type DataSnapshot } from 'firebase-admin/database';
import { createAdminApp, deleteAdminApp } from './admin-app';
import { readWriteStats, rtdbForTests, type RtdbTestServer } from './index';

const RULES = JSON.parse(readFileSync(path.join(__dirname, '../../../database.rules.json'), 'utf8')) as object;

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function increment(db: Database, at: string): Promise<{ committed: boolean; value: unknown }> {
  const result = await db.ref(at).transaction((current: number | null) => (current ?? 0) + 1);
  return { committed: result.committed, value: result.snapshot.val() };
}

let server: RtdbTestServer & { external: boolean };
const apps: App[] = [];

function app(authOverride?: object | null): Database {
  const created = createAdminApp(server, authOverride === undefined ? {} : { authOverride });
  apps.push(created);
  return getDatabase(created);
}

beforeAll(async () => {
  server = await rtdbForTests();
});

afterAll(async () => {
  await Promise.all(apps.map((a) => deleteAdminApp(a)));
  await server.close();
});

describe('data operations through firebase-admin', () => {
  it('round-trips set, get, on("value") and ServerValue.increment', async () => {
    const db = app();
    await db.ref('basics/node').set({ name: 'a', count: 1 });
    expect((await db.ref('basics/node').get()).val()).toEqual({ name: 'a', count: 1 });

    // A second app writes, so the listener's events come from the server, not from local echo.
    const writer = app();
    const seen: unknown[] = [];
    let onValue: (value: unknown) => void = () => undefined;
    db.ref('basics/node/name').on('value', (snap: DataSnapshot) => {
      seen.push(snap.val());
      onValue(snap.val());
    });
    const next = (wanted: unknown) => new Promise<void>((resolve) => {
      onValue = (value) => value === wanted && resolve();
    });
    if (seen.length === 0) await within(next('a'), 5_000, 'initial on("value")');
    const changed = next('b');
    await writer.ref('basics/node').update({ name: 'b' });
    await within(changed, 5_000, 'on("value") after update from another app');
    db.ref('basics/node/name').off();
    expect(seen).toEqual(['a', 'b']);

    await db.ref('basics/node/count').set(ServerValue.increment(41));
    await db.ref('basics/fresh').set(ServerValue.increment(3));
    await db.ref('basics/stamp').set(ServerValue.TIMESTAMP);
    expect((await db.ref('basics/node/count').get()).val()).toBe(42);
    expect(await server.read('basics/fresh')).toBe(3);
    expect(typeof (await server.read('basics/stamp'))).toBe('number');
  });

  it('carries values larger than one websocket frame, and runs onDisconnect writes', async () => {
    const db = app();
    const big = 'x'.repeat(100_000);
    await db.ref('large').set({ big });
    expect(((await app().ref('large').get()).val() as { big: string }).big).toHaveLength(100_000);

    const leaving = createAdminApp(server);
    await getDatabase(leaving).ref('presence/leaving').onDisconnect().set('gone');
    await getDatabase(leaving).ref('presence/leaving').set('here');
    await deleteAdminApp(leaving);
    const gone = new Promise<void>((resolve) =>
      db.ref('presence/leaving').on('value', (snap: DataSnapshot) => snap.val() === 'gone' && resolve()),
    );
    await within(gone, 5_000, 'onDisconnect write');
    db.ref('presence/leaving').off();
  });

  it('answers filtered get() and query listens server-side', async () => {
    const db = app();
    await db.ref('query').set({ a: 3, b: 1, c: 2, d: 5 });
    const last2 = await db.ref('query').orderByKey().limitToLast(2).get();
    expect(last2.val()).toEqual({ c: 2, d: 5 });
    const low = await db.ref('query').orderByValue().endAt(2).get();
    expect(Object.keys(low.val() as object)).toEqual(['b', 'c']);
    const listened = await db.ref('query').orderByValue().limitToFirst(1).once('value');
    expect(listened.val()).toEqual({ b: 1 });
  });
});

describe('transactions', () => {
  it('3 apps x 200 concurrent transactions on one path end at exactly 600', async () => {
    const dbs = [app(), app(), app()];
    const results = await Promise.all(
      dbs.flatMap((db) => Array.from({ length: 200 }, () => increment(db, 'contended/counter'))),
    );
    expect(results.every((r) => r.committed)).toBe(true);
    expect(await server.read('contended/counter')).toBe(600);
  });

  it('counts the writes it applied and the transaction writes it refused as stale', async () => {
    if (server.external) return; // the official emulator has no stats path
    const [first, second] = [app(), app()];
    const before = await readWriteStats(server);
    // Awaited one by one, so the client cannot fold them into one write.
    for (let i = 0; i < 5; i++) await increment(first, 'counted/counter');
    const sequential = await readWriteStats(server);
    expect(sequential.writes - before.writes).toBe(5);
    // A client that never read the node first sends its transaction against null: stale, run again.
    expect((await increment(second, 'counted/counter')).value).toBe(6);
    const after = await readWriteStats(server);
    expect(after.writes - sequential.writes).toBe(1);
    expect(after.staleWrites - sequential.staleWrites).toBeGreaterThanOrEqual(1);
  });

  it('commits on a node with 15 integer-like children (client key order in the hash)', async () => {
    const db = app();
    const children = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [String(i), { hits: i }]));
    await db.ref('windows').set(children);
    const result = await db.ref('windows').transaction((current: Record<string, { hits: number }> | null) => ({
      ...current,
      '15': { hits: 15 },
    }));
    expect(result.committed).toBe(true);
    expect(Object.keys((await server.read('windows')) as object)).toHaveLength(16);
  });

  it('does not slow down over 1,500 sequential transactions (unlisten is honoured)', async () => {
    const db = app();
    const latencies: number[] = [];
    for (let i = 0; i < 1_500; i++) {
      const started = process.hrtime.bigint();
      const result = await increment(db, 'sequential/counter');
      latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (!result.committed) throw new Error(`transaction ${i} did not commit`);
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = mean(latencies.slice(0, 100));
    const last = mean(latencies.slice(-100));
    console.log(`transaction latency: first 100 ${first.toFixed(2)} ms, last 100 ${last.toFixed(2)} ms`);
    expect(await server.read('sequential/counter')).toBe(1_500);
    expect(last).toBeLessThan(Math.max(first * 3, 5));
  }, 120_000);
});

describe('process control', () => {
  it('suspend blocks, resume completes, restart on the same port is reconnected to', async () => {
    if (server.external) return; // needs a server process we own
    const db = app();
    await increment(db, 'control/counter');

    await server.suspend();
    const pending = increment(db, 'control/counter');
    const early = await Promise.race([
      pending.then(() => 'completed'),
      new Promise((resolve) => setTimeout(() => resolve('still pending'), 500)),
    ]);
    expect(early).toBe('still pending');
    await server.resume();
    expect(await within(pending, 10_000, 'transaction after resume')).toEqual({ committed: true, value: 2 });

    await server.stop();
    await server.restart();
    // The restarted process starts empty; the client must reconnect, resync, and commit.
    const after = await within(increment(db, 'control/counter'), 30_000, 'transaction after restart');
    expect(after).toEqual({ committed: true, value: 1 });
    expect(await server.read('control/counter')).toBe(1);
  });
});

describe('rules (database.rules.json)', () => {
  let ruled: RtdbTestServer & { external: boolean };
  const ruledApps: App[] = [];
  const connect = (authOverride?: object | null): Database => {
    const created = createAdminApp(ruled, authOverride === undefined ? {} : { authOverride });
    ruledApps.push(created);
    return getDatabase(created);
  };

  beforeAll(async () => {
    ruled = await rtdbForTests({ rules: RULES });
  });

  afterAll(async () => {
    await Promise.all(ruledApps.map((a) => deleteAdminApp(a)));
    await ruled.close();
  });

  async function expectDenied(db: Database): Promise<void> {
    // The client warns on every denied write; the denial is what is asserted here.
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      await expectDeniedQuietly(db);
    } finally {
      warn.mockRestore();
    }
  }

  async function expectDeniedQuietly(db: Database): Promise<void> {
    await expect(db.ref('rateLimits/x/1').set({ count: 1 })).rejects.toThrow(/permission.denied/i);
    await expect(db.ref('rateLimits/x/1').get()).rejects.toThrow(/permission.denied/i);
    await expect(db.ref('rateLimits/x').update({ '1': 5 })).rejects.toThrow(/permission.denied/i);
    const cancelled = new Promise<Error>((resolve) => db.ref('rateLimits/x').on('value', () => undefined, resolve));
    expect((await within(cancelled, 5_000, 'listen cancel')).message).toMatch(/permission.denied/i);
  }

  async function expectAdmin(db: Database, value: number): Promise<void> {
    await db.ref('rateLimits/x/1').set({ count: value });
    expect((await db.ref('rateLimits/x/1').get()).val()).toEqual({ count: value });
    expect(await ruled.read('rateLimits/x/1')).toEqual({ count: value });
  }

  it('denies unauthenticated and signed-in users, lets the admin through, and leaks no auth', async () => {
    const admin = connect();
    await expectAdmin(admin, 1);

    const user = connect({ uid: 'u1' });
    await expectDenied(user);
    await expectAdmin(connect(), 2); // a new admin connection after a denied user

    const anonymous = connect(null);
    await expectDenied(anonymous);
    await expectAdmin(admin, 3); // the first admin connection after the denials
    await expectDenied(connect({ uid: 'u1' })); // a new user connection after admin traffic
    await expectDenied(user);
    expect(await ruled.read('rateLimits/x/1')).toEqual({ count: 3 });
  });

  it('filters a query server-side only where .indexOn covers it, as RTDB does', async () => {
    const admin = connect();
    const nodes = { k1: { e: 30 }, k2: { e: 10 }, k3: { e: 20 }, k4: { e: 40 } };
    await admin.ref('authFailures').set(nodes);
    await admin.ref('unindexed').set(nodes);

    // authFailures has ".indexOn": ["e"]: the server answers with the batch only.
    const indexed = await admin.ref('authFailures').orderByChild('e').endAt(25).limitToFirst(1).get();
    expect(indexed.val()).toEqual({ k2: { e: 10 } });

    // No index: a listen still yields the filtered view, filtered by the SDK, which warns.
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const listened = await admin.ref('unindexed').orderByChild('e').endAt(25).limitToFirst(1).once('value');
      expect(listened.val()).toEqual({ k2: { e: 10 } });
      if (!ruled.external) {
        // The warning rides on the listen's acknowledgement, which may arrive after the value event.
        const warned = () => /Using an unspecified index.*"\.indexOn": "e" at \/unindexed/.test(warn.mock.calls.flat().join(' '));
        for (let waitedMs = 0; !warned() && waitedMs < 5_000; waitedMs += 20) await new Promise((resolve) => setTimeout(resolve, 20));
        expect(warn.mock.calls.flat().join(' ')).toMatch(/Using an unspecified index.*"\.indexOn": "e" at \/unindexed/);
        // get() hands over the server's payload as it came: the whole location.
        const got = await admin.ref('unindexed').orderByChild('e').endAt(25).limitToFirst(1).get();
        expect(got.val()).toEqual(nodes);
      }
    } finally {
      warn.mockRestore();
    }
  });

  it('enforces rules on REST for anyone but the admin', async () => {
    const response = await fetch(`http://${ruled.host}/rateLimits.json?ns=${ruled.namespace}`);
    expect(response.status).toBe(401);
  });
});
