import type { App } from 'firebase-admin/app';
import { getDatabase } from 'firebase-admin/database';
import { createClient, createCluster } from 'redis';
import type { Adjustment } from '../../src/library/window/algorithms';
import { adjustSet, algorithmFor, decideSet } from '../../src/library/window/decide-set';
import type { WindowDecision } from '../../src/library/window/decision';
import type { BackendName, LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import { algorithmOf, stateSlotOf, type PolicySet } from '../../src/library/window/policy';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { readSetStates } from '../../src/library/backends/rtdb/rtdb-node';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { isSingleFixedWindow, STATE_CODECS } from '../../src/library/support/state-codecs';
import { SqliteWindowStore } from '../../src/library/backends/sqlite/sqlite-store';
import { startRedisCluster, type RedisCluster } from './redis-cluster';
import { NODE_SQLITE, sqliteTestFile, type SqliteTestFile } from './sqlite-runtime';
import { startRedisServer, type RedisServer } from './redis-server';
import { rtdbForTests, type RtdbTestServer } from './rtdb-server';
import { createAdminApp, deleteAdminApp } from './rtdb-server/admin-app';

/**
 * The store contract (test/integration/store-contract*.test.ts): every
 * LimitStore makes the pure decideSet / adjustSet atomic for one key and adds
 * nothing. Time is injected; no store may read the clock for a decision.
 */

/** A realistic epoch (RTDB turns small integer keys into arrays), aligned to a minute. */
export const BASE_MS = 1_700_000_040_000;

/** One policy of each algorithm alone, then sets of several. Windows are short so sequences cross boundaries. */
export const CASES: readonly (readonly [string, PolicySet])[] = [
  ['fixed-window', [{ name: 'fw', algorithm: 'fixed-window', limit: 5, windowMs: 10_000 }]],
  ['sliding-window', [{ name: 'sw', algorithm: 'sliding-window', limit: 5, windowMs: 10_000 }]],
  ['sliding-log', [{ name: 'sl', algorithm: 'sliding-log', limit: 4, windowMs: 10_000 }]],
  ['token-bucket', [{ name: 'tb', algorithm: 'token-bucket', limit: 3, windowMs: 10_000, burst: 5 }]],
  // 10 000 / 7 ms per unit: the TAT carries a remainder.
  ['leaky-bucket', [{ name: 'lb', algorithm: 'leaky-bucket', limit: 7, windowMs: 10_000, burst: 3 }]],
];

/** The tier of the all-or-nothing tests: a burst, a minute and a sliding ten seconds. */
export const TRIO: PolicySet = [
  { name: 'burst', algorithm: 'token-bucket', limit: 1, windowMs: 2000, burst: 3 },
  { name: 'minute', algorithm: 'fixed-window', limit: 5, windowMs: 60_000 },
  { name: 'ten', algorithm: 'sliding-log', limit: 4, windowMs: 10_000 },
];

export const SETS: readonly (readonly [string, PolicySet])[] = [
  ['token-bucket + fixed-window + sliding-log', TRIO],
  ['all five algorithms', CASES.map(([, set]) => set[0]) as unknown as PolicySet],
];

/**
 * A state as the shared stores keep it: the algorithm's compact string, '' for
 * empty (an emptied log is empty). Given `nowMs`, a state expired by then is
 * empty too: every store may forget it (memory rotation, Redis TTL, RTDB sweep).
 */
export function canonical(states: readonly unknown[], policies: PolicySet, nowMs = Number.NEGATIVE_INFINITY): string[] {
  return policies.map((policy, i) => {
    const state = states[i] ?? null;
    if (state === null || algorithmFor(policy).expiresAtMs(state, policy) <= nowMs) return '';
    return STATE_CODECS[algorithmOf(policy)].format(state);
  });
}

export interface Observed {
  readonly allowed: boolean;
  readonly decisions: readonly WindowDecision[];
  readonly states: readonly string[];
}

/** The comparable part of a decision: stores may add fields (the memory store returns decideSet's `changed`). */
export function observed(result: StoreDecision, policies: PolicySet, nowMs: number): Observed {
  const decisions = result.decisions.map(({ allowed, limit, remaining, resetAtMs, retryAfterMs }) => ({ allowed, limit, remaining, resetAtMs, retryAfterMs }));
  return { allowed: result.allowed, decisions, states: canonical(result.states, policies, nowMs) };
}

/** The pure reference for one key: decideSet and adjustSet folded over the calls. */
export class Reference {
  states: unknown[];
  /** Every state the key has had, oldest first: where adjustments take their atLeast from. */
  readonly history: unknown[][] = [];

  constructor(readonly policies: PolicySet) {
    this.states = policies.map(() => null);
    this.history.push(this.states);
  }

  consume(nowMs: number, cost: number): Observed {
    const result = decideSet(this.states, nowMs, this.policies, cost);
    this.states = [...result.states];
    this.history.push(this.states);
    return observed(result, this.policies, nowMs);
  }

  adjust(nowMs: number, adjustments: readonly (Adjustment<unknown> | null)[]): void {
    this.states = adjustSet(this.states, nowMs, this.policies, adjustments) ?? this.states;
    this.history.push(this.states);
  }
}

let keySeq = 0;
/** A key no other test has used. */
export function freshKey(prefix = 'k'): string {
  return `${prefix}${++keySeq}`;
}

/** The backends the contract runs on: the three engines, and Redis as a cluster (ADR 0056). */
export type ContractBackend = BackendName | 'redis-cluster';

export interface Backend {
  readonly name: BackendName;
  /** Which of the contract's backends: `name`, or 'redis-cluster' for Redis spoken to as a cluster. */
  readonly label: ContractBackend;
  /** The store of the first client. */
  readonly store: LimitStore;
  /** Another client on the same data (a second firebase-admin app, a second Redis connection); the first for memory. */
  readonly other: LimitStore;
  /** The key's stored value(s) as the backend holds them, for "nothing changed" checks. */
  raw(key: string, policies: PolicySet): Promise<unknown>;
  /** The key's states as stored (not as a client's view of them), canonical at `nowMs`. */
  stored(key: string, policies: PolicySet, nowMs: number): Promise<string[]>;
  /** Writes a value by hand, bypassing the store: per policy slot (Redis), or the whole node (RTDB). */
  poke(key: string, policies: PolicySet, values: readonly unknown[] | unknown): Promise<void>;
}

export interface Backends {
  readonly all: readonly Backend[];
  close(): Promise<void>;
}

const ROOT = 'contract';
const PREFIX = 'contract:';

/** Redis key of one policy of a set, as RedisWindowStore names it; in a cluster the limited key is the hash tag. */
function redisKey(key: string, policies: PolicySet, index: number, cluster = false): string {
  const base = PREFIX + (cluster ? `{${key}}` : key);
  return isSingleFixedWindow(policies) ? base : `${base}:${stateSlotOf(policies[index] as PolicySet[number])}`;
}

type KeyValueClient = { get(key: string): Promise<unknown>; set(key: string, value: string): Promise<unknown> };

function redisBackend(label: ContractBackend, stores: readonly RedisWindowStore[], client: KeyValueClient): Backend {
  const cluster = label === 'redis-cluster';
  const get = (key: string, policies: PolicySet): Promise<unknown[]> => Promise.all(policies.map((_, i) => client.get(redisKey(key, policies, i, cluster))));
  return {
    name: 'redis',
    label,
    store: stores[0] as LimitStore,
    other: stores[1] as LimitStore,
    raw: get,
    stored: async (key, policies, nowMs) => {
      const values = await get(key, policies);
      return canonical(values.map((value, i) => STATE_CODECS[algorithmOf(policies[i] as PolicySet[number])].parse(value as string | null)), policies, nowMs);
    },
    poke: async (key, policies, values) => {
      for (const [i, value] of (values as readonly string[]).entries()) await client.set(redisKey(key, policies, i, cluster), value);
    },
  };
}

/** Two SQLite stores (two connections, as two processes have) on one file; rows read and poked through a third. */
function sqliteBackend(file: SqliteTestFile, stores: readonly SqliteWindowStore[]): Backend {
  const namespace = 'contract';
  const get = (key: string, policies: PolicySet): (string | null)[] => {
    const select = file.raw.prepare('SELECT value FROM firelimit_limits WHERE namespace = ? AND key = ? AND slot = ?');
    return policies.map((policy) => (select.get(namespace, key, stateSlotOf(policy))?.value as string | undefined) ?? null);
  };
  return {
    name: 'sqlite',
    label: 'sqlite',
    store: stores[0] as LimitStore,
    other: stores[1] as LimitStore,
    raw: async (key, policies) => get(key, policies),
    stored: async (key, policies, nowMs) => canonical(get(key, policies).map((value, i) => STATE_CODECS[algorithmOf(policies[i] as PolicySet[number])].parse(value)), policies, nowMs),
    poke: async (key, policies, values) => {
      const upsert = file.raw.prepare(
        'INSERT INTO firelimit_limits (namespace, key, slot, value, expires_at_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, key, slot) DO UPDATE SET value = excluded.value',
      );
      (values as readonly string[]).forEach((value, i) => upsert.run(namespace, key, stateSlotOf(policies[i] as PolicySet[number]), value, Number.MAX_SAFE_INTEGER));
    },
  };
}

/**
 * A memory store, an RTDB and a Redis server each with two clients, and a
 * 6-node Redis Cluster with two cluster clients; on a runtime with node:sqlite,
 * two SQLite stores on one file (the sweep off, like the RTDB sweeper). The
 * RTDB sweeper is off and Redis TTLs carry an hour of margin: the injected
 * times lie in the past, so nothing may expire by the real clock mid-test.
 */
export async function startBackends(): Promise<Backends> {
  const [rtdb, redis, cluster]: [RtdbTestServer, RedisServer, RedisCluster] = await Promise.all([rtdbForTests(), startRedisServer(), startRedisCluster()]);
  const apps: App[] = [createAdminApp(rtdb), createAdminApp(rtdb)];
  const rtdbStores = apps.map((app) => new RtdbWindowStore({ database: getDatabase(app), rootPath: ROOT, sweepIntervalMs: 0 }));
  const redisStores = [0, 1].map(() => new RedisWindowStore({ url: redis.url, keyPrefix: PREFIX, ttlMarginMs: 3_600_000 }));
  const clusterStores = [0, 1].map(() => new RedisWindowStore({ url: cluster.url, mode: 'cluster', keyPrefix: PREFIX, ttlMarginMs: 3_600_000 }));
  const client = createClient({ url: redis.url });
  await client.connect();
  const clusterClient = createCluster({ rootNodes: [{ url: cluster.url.split(',')[0] as string }] });
  await clusterClient.connect();
  for (const store of [...rtdbStores, ...redisStores, ...clusterStores]) {
    if (!(await store.whenReady(10_000))) throw new Error(`${store.backend} store did not become ready`);
  }
  const memory = new MemoryWindowStore();
  const adminDb = getDatabase(apps[0] as App);

  const all: Backend[] = [
    {
      name: 'memory',
      label: 'memory',
      store: memory,
      other: memory,
      raw: async (key, policies) => canonical(memory.peek(key, policies), policies),
      stored: async (key, policies, nowMs) => canonical(memory.peek(key, policies), policies, nowMs),
      poke: () => Promise.reject(new Error('the memory store holds only what decideSet produced')),
    },
    {
      name: 'rtdb',
      label: 'rtdb',
      store: rtdbStores[0] as LimitStore,
      other: rtdbStores[1] as LimitStore,
      raw: (key) => rtdb.read(`${ROOT}/${key}`),
      stored: async (key, policies, nowMs) => canonical(readSetStates(await rtdb.read(`${ROOT}/${key}`), policies), policies, nowMs),
      poke: (key, _policies, node) => adminDb.ref(`${ROOT}/${key}`).set(node),
    },
    redisBackend('redis', redisStores, client),
    redisBackend('redis-cluster', clusterStores, clusterClient),
  ];
  const sqliteFile = NODE_SQLITE === undefined ? undefined : sqliteTestFile('contract');
  const sqliteStores = sqliteFile === undefined ? [] : [0, 1].map(() => new SqliteWindowStore({ path: sqliteFile.path, namespace: 'contract', sweepIntervalMs: 0 }));
  if (sqliteFile !== undefined) all.push(sqliteBackend(sqliteFile, sqliteStores));

  return {
    all,
    async close() {
      await Promise.all([memory, ...rtdbStores, ...redisStores, ...clusterStores, ...sqliteStores].map((store) => store.close()));
      sqliteFile?.remove();
      await Promise.all(apps.map((app) => deleteAdminApp(app)));
      client.destroy();
      clusterClient.destroy();
      await Promise.all([rtdb.close(), redis.close(), cluster.close()]);
    },
  };
}
