import type { Database } from 'firebase-admin/database';

/** Where heartbeats live, one node per root of instance id → last beat (ms); database.rules.json closes it and indexes `.value`. */
export const FLEET_HEARTBEAT_ROOT = 'fleetHeartbeats';

/** Beats this much older than the TTL are deleted by whoever beats next, a bounded number at a time. */
const FORGET_AFTER_TTLS = 10;
const FORGET_AT_ONCE = 50;

/** The node of a root's heartbeats: RTDB keys may not hold '/', so a nested root becomes one key ('a/b' → 'a|b'), as the sweep lease does. */
export function fleetHeartbeatPath(rootPath: string): string {
  return `${FLEET_HEARTBEAT_ROOT}/${rootPath.split('/').join('|')}`;
}

/**
 * One beat (ADR 0067): a plain write of this instance's time (no transaction:
 * each instance owns its leaf), then one indexed query of the beats within the
 * TTL. Off the request path, every few seconds, so three round trips are cheap;
 * a departed instance's leaf is deleted by a later beat once it is long stale.
 */
export async function rtdbHeartbeat(database: Database, rootPath: string, instanceId: string, nowMs: number, ttlMs: number): Promise<number> {
  const node = database.ref(fleetHeartbeatPath(rootPath));
  await node.child(instanceId).set(nowMs);
  const live = await node.orderByValue().startAt(nowMs - ttlMs).once('value');
  const stale = await node.orderByValue().endAt(nowMs - FORGET_AFTER_TTLS * ttlMs).limitToFirst(FORGET_AT_ONCE).once('value');
  if (stale.exists()) {
    const removals: Record<string, null> = {};
    stale.forEach((child) => {
      if (child.key !== null) removals[child.key] = null;
    });
    await node.update(removals);
  }
  return Math.max(1, live.numChildren());
}

export async function rtdbLeaveFleet(database: Database, rootPath: string, instanceId: string): Promise<void> {
  await database.ref(fleetHeartbeatPath(rootPath)).child(instanceId).remove();
}
