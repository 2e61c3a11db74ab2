import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { App } from 'firebase-admin/app';
import { getDatabase } from 'firebase-admin/database';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { OutageShareMode } from '../../src/library/limiter/outage-share';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import type { LimitStore } from '../../src/library/limiter/limit-store';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/**
 * Three instances, each with its own client, on a real backend that freezes
 * (SIGSTOP: sockets open, nothing answers): with `outageShare: 'fleet'`
 * (the default) each counts a third of what the key had left, so the three
 * together admit about what was left, not three times it (ADR 0067). The
 * estimate comes from the heartbeats in the store itself.
 */

const INSTANCES = 3;
const LIMIT = 30;
const SPENT_BEFORE = 6;
const DEADLINE_MS = 150;
const policy = { name: 'fleet', limit: LIMIT, windowMs: 600_000 };
const rules = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'database.rules.json'), 'utf8')) as object;

let redis: RedisServer;
let rtdb: RtdbTestServer;
const apps: App[] = [];
let limiters: RateLimiter[] = [];

beforeAll(async () => {
  [redis, rtdb] = await Promise.all([startRedisServer(), rtdbForTests({ rules })]);
});

afterEach(async () => {
  redis.resume();
  await rtdb.resume();
  await Promise.all(limiters.splice(0).map((limiter) => limiter.close()));
  await Promise.all(apps.splice(0).map((app) => deleteAdminApp(app)));
});

afterAll(async () => {
  await Promise.all([redis?.close(), rtdb?.close()]);
});

const backends: { name: string; store: (namespace: string) => LimitStore; freeze: () => Promise<void> }[] = [
  {
    name: 'redis',
    store: (namespace) => new RedisWindowStore({ url: redis.url, keyPrefix: `${namespace}:`, commandTimeoutMs: DEADLINE_MS }),
    freeze: async () => redis.suspend(),
  },
  {
    name: 'rtdb',
    store: (namespace) => {
      const app = createAdminApp(rtdb);
      apps.push(app);
      return new RtdbWindowStore({ database: getDatabase(app), rootPath: namespace });
    },
    freeze: () => rtdb.suspend(),
  },
];

let namespaceSeq = 0;

async function fleetOf(backend: (typeof backends)[number], outageShare: OutageShareMode): Promise<RateLimiter[]> {
  const namespace = `fleet${++namespaceSeq}`;
  limiters = await Promise.all(
    Array.from({ length: INSTANCES }, () => createRateLimiter({ store: backend.store(namespace), policy, timeoutMs: DEADLINE_MS, probeIntervalMs: 60_000, outageShare })),
  );
  expect((await Promise.all(limiters.map((limiter) => limiter.whenReady(5_000)))).every(Boolean)).toBe(true);
  // Two rounds: the first instance to beat saw only itself.
  for (let round = 0; round < 2; round++) for (const limiter of limiters) await limiter.fleet?.beat();
  return limiters;
}

/**
 * Until each instance reads the key at `spent`: on RTDB a read is answered from the listener's view, which may
 * lag another instance's last write by a moment (CI met 25 left for 24), and the local window starts from it.
 */
async function untilEachSees(fleet: readonly RateLimiter[], spent: number): Promise<void> {
  for (const limiter of fleet) {
    const deadlineMs = Date.now() + 5_000;
    while ((await limiter.consume('tok_hot', { cost: 0 })).remaining !== LIMIT - spent) {
      if (Date.now() > deadlineMs) throw new Error(`an instance never saw ${spent} spent`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** Calls each instance `perInstance` times during the freeze; returns the admissions, all of them local. */
async function admittedDuringFreeze(fleet: readonly RateLimiter[], perInstance: number): Promise<number> {
  let admitted = 0;
  for (const limiter of fleet) {
    for (let i = 0; i < perInstance; i++) {
      const decision = await limiter.consume('tok_hot');
      expect(decision.shared).toBe(false);
      if (decision.allowed) admitted++;
    }
  }
  return admitted;
}

describe.each(backends)('outage share on $name, 3 instances', (backend) => {
  it('counts every instance in the heartbeats of the store', async () => {
    const fleet = await fleetOf(backend, 'fleet');
    expect(fleet.map((limiter) => limiter.fleet?.current())).toEqual([INSTANCES, INSTANCES, INSTANCES]);
  });

  it('a frozen backend: the three together admit what the key had left, not three times it', async () => {
    const fleet = await fleetOf(backend, 'fleet');
    for (let i = 0; i < SPENT_BEFORE; i++) expect((await fleet[i % INSTANCES]!.consume('tok_hot')).shared).toBe(true);
    // Each instance has seen the shared count at SPENT_BEFORE: its local window starts from it.
    await untilEachSees(fleet, SPENT_BEFORE);
    await backend.freeze();
    const admitted = await admittedDuringFreeze(fleet, LIMIT);
    const left = LIMIT - SPENT_BEFORE;
    expect(admitted).toBeLessThanOrEqual(left);
    expect(admitted).toBeGreaterThanOrEqual(left - INSTANCES);
  });

  it("the headers of a shared-out decision count the caller's calls, not the charged units", async () => {
    const fleet = await fleetOf(backend, 'fleet');
    await fleet[0]!.consume('tok_hot');
    await backend.freeze();
    const decision = await fleet[0]!.consume('tok_hot');
    expect(decision).toMatchObject({ allowed: true, shared: false, reason: 'local_fallback' });
    // 29 units left before it, 3 charged: 26 left, which is 8 more calls of 3 units.
    expect(decision.remaining).toBe(Math.floor((LIMIT - 1 - INSTANCES) / INSTANCES));
  });

  it("outageShare 'instance' keeps ADR 0003's bound: each instance admits all that was left", async () => {
    const fleet = await fleetOf(backend, 'instance');
    expect(fleet.every((limiter) => limiter.fleet === undefined)).toBe(true);
    for (let i = 0; i < SPENT_BEFORE; i++) await fleet[i % INSTANCES]!.consume('tok_hot');
    await untilEachSees(fleet, SPENT_BEFORE);
    await backend.freeze();
    expect(await admittedDuringFreeze(fleet, LIMIT)).toBe(INSTANCES * (LIMIT - SPENT_BEFORE));
  });

  it('an instance that closes leaves the count at once', async () => {
    const fleet = await fleetOf(backend, 'fleet');
    const [first, ...rest] = fleet;
    await first!.close();
    limiters = rest;
    await rest[0]!.fleet?.beat();
    expect(rest[0]!.fleet?.current()).toBe(INSTANCES - 1);
  });
});
