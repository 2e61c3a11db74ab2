import type { App } from 'firebase-admin/app';
import { type CachedUpstreamQuota, createUpstreamQuota, UPSTREAM_QUOTA_ROOT } from '../library/quota';
import type { LimitStore } from '../library';

export { UPSTREAM_QUOTA_ROOT };

/**
 * The gateway's upstream quota on the limit store's backend. On RTDB the
 * quota nodes live in the app's default database (database.rules.json closes
 * `upstreamQuota/` to clients).
 */
export async function createUpstreamQuotaStore(limitStore: LimitStore, firebaseApp: App | undefined, options: { readonly maxStalenessMs?: number } = {}): Promise<CachedUpstreamQuota> {
  const database = limitStore.backend === 'rtdb' ? (await import('firebase-admin/database')).getDatabase(firebaseApp) : undefined;
  return createUpstreamQuota(limitStore, { ...(database !== undefined && { database }), rootPath: UPSTREAM_QUOTA_ROOT, maxStalenessMs: options.maxStalenessMs });
}
