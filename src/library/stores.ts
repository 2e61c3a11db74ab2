import type { Database } from 'firebase-admin/database';
import type { LimitStore } from './limiter/limit-store';
import { MemoryWindowStore } from './memory/memory-store';
import type { RedisWindowStore, RedisWindowStoreOptions } from './backends/redis/redis-store';
import type { RtdbWindowStoreOptions } from './backends/rtdb/rtdb-store';

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

export type RedisStoreOptions = RedisWindowStoreOptions;

/**
 * Counters in Redis (one node, or a cluster with `mode: 'cluster'`), each
 * decision one Lua script, so every instance on the same Redis shares the
 * figure. Needs the `redis` package (node-redis 5 or 6).
 */
export async function createRedisStore(options: RedisStoreOptions): Promise<RedisWindowStore> {
  const { RedisWindowStore } = await loadBackend(() => import('./backends/redis/redis-store'), 'redis', 'createRedisStore');
  return new RedisWindowStore(options);
}

export type RtdbStoreOptions = Omit<RtdbWindowStoreOptions, 'database'> &
  (
    | { /** `getDatabase(app)` of firebase-admin. */ readonly database: Database }
    | {
        /**
         * Several databases to spread keys over. `id` (use the database URL)
         * feeds the hash that picks each key's database: keep it stable, or
         * keys move and their counters start again.
         */
        readonly databases: readonly { readonly id: string; readonly database: Database }[];
      }
  );

/**
 * Counters in Firebase Realtime Database, each decision one transaction.
 * With several databases, a stable hash of the key (rendezvous hashing)
 * chooses the database, so adding one later moves only the keys it must; each
 * database gets its own sweeper. Needs `firebase-admin` (the caller passes the
 * Database objects, so the app and its credentials stay the caller's).
 */
export async function createRtdbStore(options: RtdbStoreOptions): Promise<LimitStore> {
  const { RtdbWindowStore } = await loadBackend(() => import('./backends/rtdb/rtdb-store'), 'firebase-admin', 'createRtdbStore');
  const storeOf = (database: Database): LimitStore => new RtdbWindowStore({ ...options, database });
  if ('database' in options) return storeOf(options.database);
  if (options.databases.length === 0) throw new TypeError('createRtdbStore: `databases` must list at least one database');
  if (options.databases.length === 1) return storeOf((options.databases[0] as { database: Database }).database);
  const { ShardedLimitStore } = await import('./support/sharded-store');
  return new ShardedLimitStore(options.databases.map(({ id, database }) => ({ id, store: storeOf(database) })));
}

/** A missing optional peer dependency gets the exact remedy, not a bare MODULE_NOT_FOUND. */
async function loadBackend<T>(load: () => Promise<T>, peer: string, factory: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if ((error as { code?: unknown }).code === 'MODULE_NOT_FOUND' || (error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error(`${factory} needs the "${peer}" package, an optional peer dependency of firelimit: npm install ${peer}`, { cause: error });
    }
    throw error;
  }
}
