import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { App } from 'firebase-admin/app';
import { getDatabase } from 'firebase-admin/database';
import { loadConfig } from '../../src/config/config';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { PolicySet } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { rendezvousIndex } from '../../src/library/support/rendezvous';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { ShardedLimitStore } from '../../src/library/support/sharded-store';
import { createLimitStore } from '../../src/service/create-limit-store';
import { silentLogger } from '../../src/shared/logger';
import { startRtdbTestServer, type RtdbTestServer } from '../support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';

// Several Realtime Databases as one limiter's store (FIREBASE_DATABASE_URLS):
// three RTDB test servers, each with the project's rules file, are three
// databases; three instances each hold a store per database. Each database's
// transactions are counted by the stores on it. Decision time is injected.

const RULES = JSON.parse(readFileSync(path.join(__dirname, '../../database.rules.json'), 'utf8')) as object;
const NOW_MS = 1_700_000_040_000;
const POLICIES: PolicySet = [{ name: 'minute', limit: 4, windowMs: 60_000 }];
/**
 * The databases' ids, what rendezvous hashing reads: in the service each URL; here fixed names, since the
 * servers' URLs carry a random port and namespace, and the spread of fixed keys should be one known figure.
 */
const IDS = ['https://db-one.example', 'https://db-two.example', 'https://db-three.example'];
const CALLS_PER_KEY = 6;

let servers: RtdbTestServer[] = [];
const apps: App[] = [];
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  servers = await Promise.all([0, 1, 2].map(() => startRtdbTestServer({ rules: RULES })));
});
afterAll(async () => {
  await Promise.allSettled(opened.map((resource) => resource.close()));
  await Promise.allSettled(apps.map((app) => deleteAdminApp(app)));
  await Promise.allSettled(servers.map((server) => server.close()));
});

interface Instance {
  readonly limiter: RateLimiter;
  /** This instance's store on each database, in the servers' order. */
  readonly perDatabase: readonly RtdbWindowStore[];
}

/** One instance: its own firebase-admin app per database, a store on each, and one limiter over them all. */
async function instance(): Promise<Instance> {
  const perDatabase = servers.map((server) => {
    const app = createAdminApp(server);
    apps.push(app);
    return new RtdbWindowStore({ database: getDatabase(app), rootPath: 'rateLimits', sweepIntervalMs: 0 });
  });
  const store = new ShardedLimitStore(perDatabase.map((shard, i) => ({ id: IDS[i] as string, store: shard })));
  const limiter = await createRateLimiter({ store, policies: POLICIES, clock: () => NOW_MS, timeoutMs: 10_000 });
  opened.push(limiter);
  expect(await limiter.whenReady(10_000)).toBe(true);
  return { limiter, perDatabase };
}

test('three instances on three databases: keys spread within 20 % of even, each database writes only its keys, and each key admits exactly its limit', async () => {
  const instances = await Promise.all([instance(), instance(), instance()]);
  const keys = Array.from({ length: 150 }, (_, i) => `tok_db${i}`);
  const admitted = await Promise.all(keys.map(async (key) => {
    const decisions = await Promise.all(Array.from({ length: CALLS_PER_KEY }, (_, i) => (instances[i % 3] as Instance).limiter.consume(key)));
    return { key, admitted: decisions.filter((d) => d.allowed).length, local: decisions.filter((d) => !d.shared).length };
  }));
  expect(admitted).toEqual(keys.map((key) => ({ key, admitted: 4, local: 0 })));

  // Where each key is, read from each database itself, and what each database was asked to do.
  const stored = await Promise.all(servers.map(async (server) => Object.keys(((await server.read('rateLimits')) ?? {}) as object).sort()));
  const expected = servers.map((_, i) => keys.filter((key) => rendezvousIndex(key, IDS) === i).sort());
  expect(stored).toEqual(expected);
  for (const onOne of stored) expect(Math.abs(onOne.length - keys.length / 3)).toBeLessThanOrEqual(0.2 * (keys.length / 3));
  const transactions = servers.map((_, i) => instances.reduce((sum, inst) => sum + (inst.perDatabase[i] as RtdbWindowStore).transactionsStarted, 0));
  for (const [i, count] of transactions.entries()) expect({ database: i, atLeastOnePerCall: count >= (expected[i] as string[]).length * CALLS_PER_KEY }).toEqual({ database: i, atLeastOnePerCall: true });
  const total = transactions.reduce((a, b) => a + b, 0);
  for (const count of transactions) expect(Math.abs(count - total / 3)).toBeLessThanOrEqual(0.2 * (total / 3));
});

test('FIREBASE_DATABASE_URLS through the service\'s store factory: one store per database, the key in the database rendezvous picks', async () => {
  // One test server, three namespaces: three databases to firebase-admin, all reachable through the emulator host.
  const server = servers[0] as RtdbTestServer;
  const urls = ['one', 'two', 'three'].map((ns) => `http://${server.host}?ns=fl-multi-${ns}`);
  const config = loadConfig({ RATE_LIMIT_BACKEND: 'rtdb', FIREBASE_DATABASE_URLS: urls.join(','), FIREBASE_DATABASE_EMULATOR_HOST: server.host });
  expect(config.firebase.databaseUrls).toEqual(urls);
  const app = createAdminApp(server);
  apps.push(app);
  const store = await createLimitStore(config, app, { namespace: 'rateLimits', logger: silentLogger });
  opened.push(store);
  expect(store).toBeInstanceOf(ShardedLimitStore);
  expect(await store.whenReady?.(10_000)).toBe(true);
  const keys = ['tok_svc_a', 'tok_svc_b', 'tok_svc_c', 'tok_svc_d', 'tok_svc_e', 'tok_svc_f'];
  for (const key of keys) await store.consume(key, NOW_MS, POLICIES, 1);
  const where = await Promise.all(keys.map(async (key) => {
    const found = await Promise.all(urls.map(async (url) => {
      const ns = new URL(url).searchParams.get('ns') as string;
      const response = await fetch(`http://${server.host}/rateLimits/${key}.json?ns=${ns}`, { headers: { authorization: 'Bearer owner' } });
      return (await response.json()) !== null;
    }));
    return found.flatMap((hit, i) => (hit ? [i] : []));
  }));
  expect(where).toEqual(keys.map((key) => [rendezvousIndex(key, urls)]));
});

test('a frozen database puts only its own keys on local windows; the keys of the other databases stay shared, and it comes back', async () => {
  // A short deadline and probe interval so the outage opens and closes within the test.
  const perDatabase = servers.map((server) => {
    const app = createAdminApp(server);
    apps.push(app);
    return new RtdbWindowStore({ database: getDatabase(app), rootPath: 'frozenShard', sweepIntervalMs: 0 });
  });
  const store = new ShardedLimitStore(perDatabase.map((shard, i) => ({ id: IDS[i] as string, store: shard })));
  const logged: Record<string, unknown>[] = [];
  const logger = { ...silentLogger, warn: (_message: string, fields?: Record<string, unknown>) => void logged.push(fields ?? {}) };
  const limiter = await createRateLimiter({ store, policies: POLICIES, clock: () => NOW_MS, timeoutMs: 300, probeIntervalMs: 200, logger });
  opened.push(limiter);
  expect(await limiter.whenReady(10_000)).toBe(true);
  const keys = Array.from({ length: 60 }, (_, i) => `tok_freeze${i}`);
  const frozenIndex = 1;
  const onFrozen = keys.filter((key) => rendezvousIndex(key, IDS) === frozenIndex);
  const onOthers = keys.filter((key) => rendezvousIndex(key, IDS) !== frozenIndex);
  expect(onFrozen.length).toBeGreaterThan(5);

  await (servers[frozenIndex] as RtdbTestServer).suspend();
  try {
    // The first call on a frozen key waits out the deadline and opens that database's outage; the rest answer at once.
    for (const key of onFrozen) expect(await limiter.consume(key)).toMatchObject({ allowed: true, shared: false, reason: 'local_fallback' });
    for (const key of onOthers) expect(await limiter.consume(key)).toMatchObject({ allowed: true, shared: true });
  } finally {
    await (servers[frozenIndex] as RtdbTestServer).resume();
  }
  expect(logged.filter((fields) => fields.event === 'ratelimit.outage_started').map((fields) => fields.shard)).toEqual([IDS[frozenIndex]]);

  // Back: after a probe interval, the frozen database's keys are shared again.
  let decision = await limiter.consume(onFrozen[0] as string);
  for (let tries = 0; !decision.shared && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    decision = await limiter.consume(onFrozen[0] as string);
  }
  expect(decision.shared).toBe(true);
});
