/**
 * `firelimit/quota`: one upstream's published quota shared by every caller
 * and instance (a gateway's, or any client of a rate-limited API). Each call
 * is scheduled on a cursor in the store, so the fleet together stays under
 * the upstream's rate; a call that must wait holds its own slot
 * (docs/adr/0031-upstream-quota-cursor.md).
 */
export { createUpstreamQuota, UPSTREAM_QUOTA_ROOT, type UpstreamQuotaOptions } from './create-upstream-quota';
export { CachedUpstreamQuota, type CachedUpstreamQuotaOptions, type CursorCacheStats } from './upstream-cursor-cache';
export { GuardedUpstreamQuota, type GuardedUpstreamQuotaOptions } from './upstream-guarded-store';
export { MemoryUpstreamQuotaStore } from '../memory/upstream-memory-store';
export type { UpstreamQuotaStore, UpstreamScheduled } from '../schedule/upstream-quota-store';
export { holderIdOf, type UpstreamCaller } from '../schedule/upstream-holder';
export {
  BASIS_POINTS,
  DEFAULT_UPSTREAM_GRACE_MS,
  DEFAULT_UPSTREAM_HEADROOM,
  DEFAULT_UPSTREAM_MAX_RESERVATIONS,
  DEFAULT_UPSTREAM_MAX_WAIT_MS,
  defaultReservationsPerHolder,
  intervalOf,
  MAX_UPSTREAM_RESERVATIONS,
  resolveUpstreamPolicy,
  type UpstreamPolicy,
  type UpstreamPolicyOptions,
} from '../schedule/upstream-policy';
export type { UpstreamOutcome, UpstreamRejection, UpstreamScheduleResult } from '../schedule/upstream-schedule';
export type { UpstreamReservation, UpstreamState } from '../schedule/upstream-state';
