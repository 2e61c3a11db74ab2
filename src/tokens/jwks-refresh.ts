/**
 * When a key set may be fetched again: a pure function of what the cache
 * holds and the time, so the bound a flood of forged tokens meets is
 * tested with numbers, not sleeps.
 *
 * - Never two fetches within `cooldownMs` of each other's start, whatever
 *   asks: an unknown `kid`, a set past its age, or a fetch that failed
 *   (a down issuer is not retried per request).
 * - Keys older than `maxAgeMs` are refreshed on the next use; until that
 *   fetch succeeds the old keys keep verifying (a rotation publishes the new
 *   key before it signs with it), so an issuer outage is not our outage.
 */
export interface KeySetState {
  /** When the last fetch started, successful or not; undefined: never. */
  readonly lastAttemptAtMs: number | undefined;
  /** When the keys held were fetched; undefined: none held. */
  readonly keysFetchedAtMs: number | undefined;
}

export interface RefreshBounds {
  readonly maxAgeMs: number;
  readonly cooldownMs: number;
}

/** Why a key is being looked up: a normal use, or a token naming a `kid` the held set lacks. */
export type KeyNeed = 'use' | 'unknown_kid';

/** True when a fetch may start now. */
export function mayFetchKeys(state: KeySetState, nowMs: number, need: KeyNeed, bounds: RefreshBounds): boolean {
  if (state.lastAttemptAtMs !== undefined && nowMs - state.lastAttemptAtMs < bounds.cooldownMs && nowMs >= state.lastAttemptAtMs) return false;
  if (state.keysFetchedAtMs === undefined) return true;
  if (need === 'unknown_kid') return true;
  return nowMs - state.keysFetchedAtMs >= bounds.maxAgeMs || nowMs < state.keysFetchedAtMs;
}
