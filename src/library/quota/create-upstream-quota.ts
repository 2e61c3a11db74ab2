import type { Database } from 'firebase-admin/database';
import type { LimitStore } from '../limiter/limit-store';
import type { RtdbDatabase } from '../store-options';
import { MemoryUpstreamQuotaStore } from '../memory/upstream-memory-store';
import type { UpstreamQuotaStore } from '../schedule/upstream-quota-store';
import { CachedUpstreamQuota } from './upstream-cursor-cache';

/** Where quota nodes live in RTDB by default; database.rules.json closes it to clients. */
export const UPSTREAM_QUOTA_ROOT = 'upstreamQuota';

export interface UpstreamQuotaOptions {
  /** The RTDB database, when the limit store is on RTDB (the limit store does not expose its own). */
  readonly database?: RtdbDatabase;
  /** Default `upstreamQuota`. */
  readonly rootPath?: string;
  /** How stale a cached cursor may be before a call reads the store again. */
  readonly maxStalenessMs?: number;
}

/**
 * The upstream quota's store on the backend the limiter already uses, behind
 * the cursor cache (docs/adr/0033-upstream-atomic-not-read-then-write.md):
 * memory, a transaction on `upstreamQuota/{key}` on RTDB, the Lua twin on
 * the limit store's own Redis connection, or one BEGIN IMMEDIATE on the
 * limit store's SQLite file. What a gateway calls `schedule` on.
 */
export async function createUpstreamQuota(limitStore: LimitStore, options: UpstreamQuotaOptions = {}): Promise<CachedUpstreamQuota> {
  let store: UpstreamQuotaStore;
  switch (limitStore.backend) {
    case 'memory':
      store = new MemoryUpstreamQuotaStore();
      break;
    case 'rtdb': {
      if (options.database === undefined) throw new TypeError('createUpstreamQuota: a limit store on rtdb needs `database` for the quota nodes');
      const { RtdbUpstreamQuotaStore } = await import('../backends/rtdb/upstream-rtdb-store');
      store = new RtdbUpstreamQuotaStore({ database: options.database as Database, rootPath: options.rootPath ?? UPSTREAM_QUOTA_ROOT });
      break;
    }
    case 'redis': {
      const [{ RedisWindowStore }, { RedisUpstreamQuotaStore }] = await Promise.all([import('../backends/redis/redis-store'), import('../backends/redis/upstream-redis-store')]);
      if (!(limitStore instanceof RedisWindowStore)) throw new TypeError('createUpstreamQuota: the redis upstream quota shares a RedisWindowStore connection (createRedisStore)');
      store = new RedisUpstreamQuotaStore({ redis: limitStore });
      break;
    }
    case 'sqlite': {
      const [{ SqliteWindowStore }, { SqliteUpstreamQuotaStore }] = await Promise.all([import('../backends/sqlite/sqlite-store'), import('../backends/sqlite/sqlite-upstream-quota-store')]);
      if (!(limitStore instanceof SqliteWindowStore)) throw new TypeError('createUpstreamQuota: the sqlite upstream quota shares a SqliteWindowStore file (createSqliteStore)');
      store = new SqliteUpstreamQuotaStore({ sqlite: limitStore });
      break;
    }
  }
  return new CachedUpstreamQuota({ store, maxStalenessMs: options.maxStalenessMs });
}
