import type { App } from 'firebase-admin/app';
import { getDatabase, type Database } from 'firebase-admin/database';
import { RtdbSweeper, SWEEP_LEASE_INTERVALS } from '../../src/library/backends/rtdb/rtdb-sweeper';
import { sweepLeasePath } from '../../src/library/backends/rtdb/rtdb-sweep-lease';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';

/** As database.rules.json: `e` indexed on every root, leases closed to clients (the admin SDK passes). */
const RULES = { rules: { '.read': false, '.write': false, $root: { '.indexOn': ['e'] } } };
const INTERVAL_MS = 60_000;
const LEASE_MS = SWEEP_LEASE_INTERVALS * INTERVAL_MS;
const T0 = 1_800_000_000_000;
/** A node long dead at T0 (its window ended a day before). */
const dead = (): Record<string, number> => ({ 1: 3, e: T0 - 86_400_000 });

let server: RtdbTestServer;
const apps: App[] = [];
const sweepers: RtdbSweeper[] = [];
let rootSeq = 0;

beforeAll(async () => {
  server = await rtdbForTests({ rules: RULES });
});
afterEach(() => {
  for (const sweeper of sweepers.splice(0)) sweeper.stop();
});
afterAll(async () => {
  await Promise.all(apps.map((app) => deleteAdminApp(app)));
  await server.close();
});

/** An instance: its own admin app (its own connection), a sweeper on `root` at its own clock; the timer is driven by the test. */
function instance(root: string, clock: () => number): { sweeper: RtdbSweeper; database: Database } {
  const app = createAdminApp(server);
  apps.push(app);
  const database = getDatabase(app);
  // intervalMs > 0 makes it a timed sweeper (leased); start() is never called, the test calls timedRun().
  const sweeper = new RtdbSweeper({ database, rootPath: root, intervalMs: INTERVAL_MS, clock });
  sweepers.push(sweeper);
  return { sweeper, database };
}

describe('one sweeper per database and root at a time (a lease in the database)', () => {
  test('of three instances on one root, only the first sweeps; the others skip while its lease holds', async () => {
    const root = `leased${++rootSeq}`;
    const now = T0;
    const [a, b, c] = [instance(root, () => now), instance(root, () => now), instance(root, () => now)];
    await a.database.ref(root).update({ k1: dead(), k2: dead() });

    expect(await a.sweeper.timedRun()).toMatchObject({ swept: 2 });
    expect(await b.sweeper.timedRun()).toBeUndefined();
    expect(await c.sweeper.timedRun()).toBeUndefined();
    expect([a.sweeper.stats.skippedRuns, b.sweeper.stats.skippedRuns, c.sweeper.stats.skippedRuns]).toEqual([0, 1, 1]);
    expect([a.sweeper.stats.runs, b.sweeper.stats.runs, c.sweeper.stats.runs]).toEqual([1, 0, 0]);
    expect(await server.read(sweepLeasePath(root))).toEqual({ holder: expect.any(String), expiresAtMs: now + LEASE_MS });
  });

  test('the holder renews at each run; when it stops running, another instance takes over once the lease lapses', async () => {
    const root = `leased${++rootSeq}`;
    let nowA = T0;
    let nowB = T0;
    const a = instance(root, () => nowA);
    const b = instance(root, () => nowB);
    expect(await a.sweeper.timedRun()).toBeDefined();
    // A keeps running every interval: B never gets the lease.
    for (let i = 1; i <= 5; i++) {
      nowA = T0 + i * INTERVAL_MS;
      nowB = nowA + 1;
      expect(await a.sweeper.timedRun()).toBeDefined();
      expect(await b.sweeper.timedRun()).toBeUndefined();
    }
    // A stops getting CPU (Cloud Run between requests) at T0 + 5 intervals; its lease holds until then + LEASE_MS.
    const lastRenewalMs = nowA;
    nowB = lastRenewalMs + LEASE_MS - 1;
    expect(await b.sweeper.timedRun()).toBeUndefined();
    nowB = lastRenewalMs + LEASE_MS;
    await b.database.ref(root).update({ k: dead() });
    expect(await b.sweeper.timedRun()).toMatchObject({ swept: 1 });
    // A wakes up: the lease is B's now.
    nowA = nowB + 1;
    expect(await a.sweeper.timedRun()).toBeUndefined();
  });

  test('roots nested in a path lease separately: a/b and a do not share or clobber a lease', async () => {
    const root = `leased${++rootSeq}`;
    const [outer, inner] = [instance(root, () => T0), instance(`${root}/inner`, () => T0)];
    expect(await outer.sweeper.timedRun()).toBeDefined();
    expect(await inner.sweeper.timedRun()).toBeDefined();
    expect(await server.read(sweepLeasePath(root))).toMatchObject({ expiresAtMs: T0 + LEASE_MS });
    expect(await server.read(sweepLeasePath(`${root}/inner`))).toMatchObject({ expiresAtMs: T0 + LEASE_MS });
  });

  test('singleSweeper: false sweeps on every instance, without a lease', async () => {
    const root = `leased${++rootSeq}`;
    const app = createAdminApp(server);
    apps.push(app);
    const database = getDatabase(app);
    const [a, b] = [0, 1].map(() => new RtdbSweeper({ database, rootPath: root, intervalMs: INTERVAL_MS, clock: () => T0, singleSweeper: false }));
    sweepers.push(a as RtdbSweeper, b as RtdbSweeper);
    expect(await a?.timedRun()).toBeDefined();
    expect(await b?.timedRun()).toBeDefined();
    expect(await server.read(sweepLeasePath(root))).toBeNull();
  });

  test('a lease that cannot be read does not stop the sweep: the run goes ahead and reports its own failure', async () => {
    const root = `leased${++rootSeq}`;
    const { sweeper, database } = instance(root, () => T0);
    await database.goOffline();
    const run = sweeper.timedRun();
    // The lease transaction waits for the connection; back online, both lease and sweep go through.
    await database.goOnline();
    expect(await run).toBeDefined();
  });
});
