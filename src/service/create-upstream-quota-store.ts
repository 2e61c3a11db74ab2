import type { App } from 'firebase-admin/app';
import type { LimitStore } from '../limiter/limit-store';
import { MemoryUpstreamQuotaStore } from '../limiter/stores/upstream-memory-store';
import { CachedUpstreamQuota } from '../limiter/upstream/upstream-cursor-cache';
import type { UpstreamQuotaStore } from '../limiter/upstream/upstream-quota-store';

/** Where quota nodes live in RTDB; database.rules.json closes it to clients. */
export const UPSTREAM_QUOTA_ROOT = 'upstreamQuota';

/**
 * The upstream quota's store on the backend the limiter already uses, behind
 * the cursor cache (docs/adr/0033-upstream-atomic-not-read-then-write.md):
 * memory, a transaction on `upstreamQuota/{key}` on the same RTDB client, or
 * the Lua twin on the limit store's own Redis connection, or one BEGIN
 * IMMEDIATE on the limit store's SQLite file. What the gateway
 * calls `schedule` on.
 */
export async function createUpstreamQuotaStore(limitStore: LimitStore, firebaseApp: App | undefined, options: { readonly maxStalenessMs?: number } = {}): Promise<CachedUpstreamQuota> {
  let store: UpstreamQuotaStore;
  switch (limitStore.backend) {
    case 'memory':
      store = new MemoryUpstreamQuotaStore();
      break;
    case 'rtdb': {
      const [{ getDatabase }, { RtdbUpstreamQuotaStore }] = await Promise.all([import('firebase-admin/database'), import('../limiter/stores/upstream-rtdb-store')]);
      store = new RtdbUpstreamQuotaStore({ database: getDatabase(firebaseApp), rootPath: UPSTREAM_QUOTA_ROOT });
      break;
    }
    case 'redis': {
      const [{ RedisWindowStore }, { RedisUpstreamQuotaStore }] = await Promise.all([import('../limiter/stores/redis-store'), import('../limiter/stores/upstream-redis-store')]);
      if (!(limitStore instanceof RedisWindowStore)) throw new TypeError('the redis upstream quota shares a RedisWindowStore connection');
      store = new RedisUpstreamQuotaStore({ redis: limitStore });
      break;
    }
    case 'sqlite': {
      const [{ SqliteWindowStore }, { SqliteUpstreamQuotaStore }] = await Promise.all([import('../library/backends/sqlite/sqlite-store'), import('../library/backends/sqlite/sqlite-upstream-quota-store')]);
      if (!(limitStore instanceof SqliteWindowStore)) throw new TypeError('the sqlite upstream quota shares a SqliteWindowStore connection');
      store = new SqliteUpstreamQuotaStore({ sqlite: limitStore });
      break;
    }
  }
  return new CachedUpstreamQuota({ store, maxStalenessMs: options.maxStalenessMs });
}
