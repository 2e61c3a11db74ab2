import type { UpstreamOutcome } from './upstream-schedule';
import type { UpstreamState } from './upstream-state';

/**
 * Whether a no-write answer scheduleUpstream gave on `state` is the one the
 * store would give on what it holds, when `state` is a view cut short (its
 * `omitted` reservations all come after the last listed slot; a state that
 * is not cut short always decides). On such a view:
 *
 * - a call at or before the last listed slot, echoing nothing or a listed
 *   slot, finds every reservation that could be its target or has lapsed
 *   (both have slots at or before now, or are the echoed one), so `reserved`
 *   again, `daily_budget` and `max_wait` come out as on the whole state;
 * - `token_reservations_full` too: the holder holds at least as many as the
 *   view shows, and its oldest is the first of its listed ones;
 * - `reservations_full` does not: a holder at its share among the omitted
 *   is told `token_reservations_full` by the store, with another retryAfterMs;
 * - a later call, or one echoing a later slot, may have a target the view
 *   leaves out.
 *
 * Pure, for the cursor cache (upstream-cursor-cache.ts), which sends what a
 * view does not decide to the store.
 */
export function viewDecides(state: UpstreamState | null, nowMs: number, claimSlotAtMs: number | null, outcome: UpstreamOutcome): boolean {
  if (state === null || (state.omitted ?? 0) === 0) return true;
  const last = state.reservations[state.reservations.length - 1];
  if (last === undefined) return false;
  if (nowMs > last.slotAtMs || (claimSlotAtMs !== null && claimSlotAtMs > last.slotAtMs)) return false;
  return !(outcome.status === 'rejected' && outcome.reason === 'reservations_full');
}
