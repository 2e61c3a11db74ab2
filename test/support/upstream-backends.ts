import type { App } from 'firebase-admin/app';
import { getDatabase } from 'firebase-admin/database';
import { createClient, createCluster } from 'redis';
import type { BackendName } from '../../src/library/limiter/limit-store';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { MemoryUpstreamQuotaStore } from '../../src/library/memory/upstream-memory-store';
import { RedisUpstreamQuotaStore } from '../../src/library/backends/redis/upstream-redis-store';
import { RtdbUpstreamQuotaStore } from '../../src/library/backends/rtdb/upstream-rtdb-store';
import type { UpstreamQuotaStore } from '../../src/library/schedule/upstream-quota-store';
import { SqliteWindowStore } from '../../src/library/backends/sqlite/sqlite-store';
import { SqliteUpstreamQuotaStore } from '../../src/library/backends/sqlite/sqlite-upstream-quota-store';
import { startRedisCluster, type RedisCluster } from './redis-cluster';
import { NODE_SQLITE, sqliteTestFile } from './sqlite-runtime';
import { startRedisServer, type RedisServer } from './redis-server';
import { rtdbForTests, type RtdbTestServer } from './rtdb-server';
import { createAdminApp, deleteAdminApp } from './rtdb-server/admin-app';
import { readUpstreamState } from './upstream-redis-layout';

/**
 * Every UpstreamQuotaStore on real parts, for the upstream store contract: a
 * memory store, and an RTDB test server and a redis-server each with two
 * clients (two instances), and on a runtime with node:sqlite two SQLite
 * stores on one file. Redis TTLs carry an hour of margin: the injected
 * times lie in the past, so nothing may expire by the real clock mid-test.
 */
export interface UpstreamBackend {
  readonly name: BackendName;
  /** `name`, or 'redis-cluster' for Redis spoken to as a cluster. */
  readonly label: BackendName | 'redis-cluster';
  readonly store: UpstreamQuotaStore;
  /** A second client on the same data; the first for memory. */
  readonly other: UpstreamQuotaStore;
  /** The key's stored value as the backend holds it (Redis: the head and its reservations), for "nothing written" checks. */
  raw(key: string): Promise<string | null>;
}

export interface UpstreamBackends {
  readonly all: readonly UpstreamBackend[];
  close(): Promise<void>;
}

const ROOT = 'upstreamContract';
const PREFIX = 'contract:';
const UPSTREAM_PREFIX = 'upstream:';

export async function startUpstreamBackends(): Promise<UpstreamBackends> {
  const [rtdb, redis, cluster]: [RtdbTestServer, RedisServer, RedisCluster] = await Promise.all([rtdbForTests(), startRedisServer(), startRedisCluster()]);
  const apps: App[] = [createAdminApp(rtdb), createAdminApp(rtdb)];
  const rtdbStores = apps.map((app) => new RtdbUpstreamQuotaStore({ database: getDatabase(app), rootPath: ROOT }));
  const connections = [0, 1].map(() => new RedisWindowStore({ url: redis.url, keyPrefix: PREFIX }));
  const clusterConnections = [0, 1].map(() => new RedisWindowStore({ url: cluster.url, mode: 'cluster', keyPrefix: PREFIX }));
  for (const connection of [...connections, ...clusterConnections]) {
    if (!(await connection.whenReady(10_000))) throw new Error('redis store did not become ready');
  }
  const redisStores = connections.map((connection) => new RedisUpstreamQuotaStore({ redis: connection, keyPrefix: UPSTREAM_PREFIX, ttlMarginMs: 3_600_000 }));
  const clusterStores = clusterConnections.map((connection) => new RedisUpstreamQuotaStore({ redis: connection, keyPrefix: UPSTREAM_PREFIX, ttlMarginMs: 3_600_000 }));
  const client = createClient({ url: redis.url });
  await client.connect();
  const clusterClient = createCluster({ rootNodes: [{ url: cluster.url.split(',')[0] as string }] });
  await clusterClient.connect();
  const memory = new MemoryUpstreamQuotaStore();
  const all: UpstreamBackend[] = [
    { name: 'memory', label: 'memory', store: memory, other: memory, raw: async () => null },
    {
      name: 'rtdb',
      label: 'rtdb',
      store: rtdbStores[0] as UpstreamQuotaStore,
      other: rtdbStores[1] as UpstreamQuotaStore,
      raw: async (key) => (await rtdb.read(`${ROOT}/${key}`)) as string | null,
    },
    {
      name: 'redis',
      label: 'redis',
      store: redisStores[0] as UpstreamQuotaStore,
      other: redisStores[1] as UpstreamQuotaStore,
      raw: async (key) => readUpstreamState(client, PREFIX + UPSTREAM_PREFIX + key),
    },
    {
      name: 'redis',
      label: 'redis-cluster',
      store: clusterStores[0] as UpstreamQuotaStore,
      other: clusterStores[1] as UpstreamQuotaStore,
      // In a cluster the quota key is its own hash tag.
      raw: async (key) => readUpstreamState(clusterClient, `${PREFIX}{${UPSTREAM_PREFIX}${key}}`),
    },
  ];
  // On a runtime with node:sqlite: two stores, each on its own connection to one file (two processes).
  const sqliteFile = NODE_SQLITE === undefined ? undefined : sqliteTestFile('upstream');
  const sqliteConnections = sqliteFile === undefined ? [] : [0, 1].map(() => new SqliteWindowStore({ path: sqliteFile.path, sweepIntervalMs: 0 }));
  const sqliteStores = sqliteConnections.map((connection) => new SqliteUpstreamQuotaStore({ sqlite: connection }));
  if (sqliteFile !== undefined) {
    all.push({
      name: 'sqlite',
      label: 'sqlite',
      store: sqliteStores[0] as UpstreamQuotaStore,
      other: sqliteStores[1] as UpstreamQuotaStore,
      raw: async (key) => (sqliteFile.raw.prepare('SELECT value FROM firelimit_upstream WHERE namespace = ? AND key = ?').get('upstream', key)?.value as string | undefined) ?? null,
    });
  }
  return {
    all,
    async close() {
      await Promise.all([memory, ...rtdbStores, ...redisStores, ...connections, ...clusterStores, ...clusterConnections, ...sqliteStores, ...sqliteConnections].map((store) => store.close()));
      sqliteFile?.remove();
      await Promise.all(apps.map((app) => deleteAdminApp(app)));
      client.destroy();
      clusterClient.destroy();
      await Promise.all([rtdb.close(), redis.close(), cluster.close()]);
    },
  };
}
