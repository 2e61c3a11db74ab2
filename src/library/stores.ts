import type { Database } from 'firebase-admin/database';
import type { LimitStore } from './limiter/limit-store';
import { MemoryWindowStore } from './memory/memory-store';
import type { RedisStoreOptions, RtdbDatabase, RtdbStoreTuning } from './store-options';
import type { SqliteWindowStoreOptions } from './backends/sqlite/sqlite-store';
import { loadPeer } from './support/load-peer';

/**
 * The stores a limiter counts in, one factory each. A store's backend client
 * is loaded when its factory runs, never when `firelimit` is imported: a user
 * of the memory store needs neither `redis` nor `firebase-admin` installed
 * (both are optional peer dependencies).
 */

/** This process only: exact for one instance, and the local window every shared store falls back to. */
export function createMemoryStore(): LimitStore {
  return new MemoryWindowStore();
}

/**
 * Counters in Redis (one node, or Redis Cluster with `mode: 'cluster'`), each
 * decision one Lua script, so every instance on the same Redis shares the
 * figure. Needs the `redis` package (node-redis 5 or 6). The limiter closes
 * the store, and with it the connection.
 */
export async function createRedisStore(options: RedisStoreOptions): Promise<LimitStore> {
  const { RedisWindowStore } = await loadPeer(() => import('./backends/redis/redis-store'), 'redis', 'createRedisStore');
  return new RedisWindowStore(options);
}

export type RtdbStoreOptions = RtdbStoreTuning &
  (
    | {
        /** `getDatabase(app)` of firebase-admin; the app and its credentials stay the caller's. */
        readonly database: RtdbDatabase;
      }
    | {
        /**
         * Several databases to spread keys over. `id` (use the database URL)
         * feeds the hash that picks each key's database: keep it stable, or
         * keys move and their counters start again.
         */
        readonly databases: readonly { readonly id: string; readonly database: RtdbDatabase }[];
      }
  );

/**
 * Counters in Firebase Realtime Database, each decision one transaction.
 * With several databases, a stable hash of the key (rendezvous hashing)
 * chooses the database, so adding one later moves only the keys it must; each
 * database gets its own sweeper. Needs `firebase-admin`.
 */
export async function createRtdbStore(options: RtdbStoreOptions): Promise<LimitStore> {
  const { RtdbWindowStore } = await loadPeer(() => import('./backends/rtdb/rtdb-store'), 'firebase-admin', 'createRtdbStore');
  const storeOf = (database: RtdbDatabase): LimitStore => {
    // Typed structurally (so these declarations need no firebase-admin): check the shape here instead.
    if (typeof (database as { ref?: unknown } | null)?.ref !== 'function') throw new TypeError('createRtdbStore: `database` must be a firebase-admin Database, e.g. getDatabase(app) from firebase-admin/database');
    return new RtdbWindowStore({ ...options, database: database as Database });
  };
  if ('database' in options) return storeOf(options.database);
  const [first, ...more] = options.databases;
  if (first === undefined) throw new TypeError('createRtdbStore: `databases` must list at least one database');
  if (more.length === 0) return storeOf(first.database);
  const { ShardedLimitStore } = await import('./support/sharded-store');
  return new ShardedLimitStore(options.databases.map(({ id, database }) => ({ id, store: storeOf(database) })));
}

export type SqliteStoreOptions = SqliteWindowStoreOptions;

/**
 * Counters in one SQLite file (`node:sqlite`, Node 22.13 and later; no
 * package to install): every process on one host given the same `path`
 * shares them, and they survive a restart. Each decision is one `BEGIN
 * IMMEDIATE` transaction (docs/adr/0062-sqlite-store.md). On a runtime
 * without node:sqlite it throws with the remedy.
 */
export async function createSqliteStore(options: SqliteStoreOptions): Promise<LimitStore> {
  const { SqliteWindowStore } = await import('./backends/sqlite/sqlite-store');
  return new SqliteWindowStore(options);
}
