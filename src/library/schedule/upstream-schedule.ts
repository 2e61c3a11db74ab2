import { DAY_MS, intervalOf, type UpstreamPolicy } from './upstream-policy';
import type { UpstreamReservation, UpstreamState } from './upstream-state';

/**
 * The shared upstream quota's decision: one cursor handing out slots T apart
 * (T = windowMs / (limit × headroom), upstream-policy.ts), virtual scheduling
 * as GCRA with a burst of one. Pure: time comes in as `nowMs`, the state as
 * read from a store, and what to write comes back as `next`; stores only make
 * one call atomic (docs/adr/0031-upstream-quota-cursor.md).
 *
 * A holder (upstream-holder.ts) is a token: it may hold up to
 * maxReservationsPerHolder reservations, one per call that must wait
 * (docs/adr/0053-one-slot-per-call.md). For a call:
 * - that echoes a slot its holder holds (`claimSlotAtMs`): before the slot,
 *   `reserved` at that same slot (nothing written but lapses); from the slot
 *   to slot + graceMs, `run` (claimed): that reservation goes, no new slot;
 * - that echoes nothing (or a slot its holder does not hold): the holder's
 *   oldest reservation whose slot has come, if any, is claimed the same way;
 * - otherwise it is a new call: its slot is max(cursor, now). At now: `run`.
 *   Later: `reserved` at that slot, unless the day's budget is spent, the
 *   slot is more than maxWaitMs away, the holder already holds
 *   maxReservationsPerHolder, or maxReservations are outstanding: `rejected`.
 *
 * Promises, held by test/unit/upstream/upstream-schedule.test.ts:
 * - no two runs are closer than T: a run moves the cursor to now + T; a
 *   reservation, which may be claimed anywhere in [slot, slot + graceMs],
 *   moves it to slot + graceMs + T (docs/adr/0032-upstream-grace-and-cap.md);
 * - a rejection, and a reservation asked for again early, write nothing but
 *   the drop of reservations that have lapsed, so each lapse is written once;
 * - an unclaimed reservation expires after graceMs: its slot is lost (the
 *   cursor never moves back), its unit of the day's budget is given back,
 *   and the first call to see it lapsed writes that down: a later call whose
 *   clock is behind can no longer claim what an earlier one found expired;
 * - a clock behind the state is answered as at the state's time or later: it
 *   is told to wait, never run early;
 * - integers only, so the Lua twin (stores/lua/upstream-schedule.ts) agrees
 *   bit for bit.
 */
/** `unavailable` is never scheduleUpstream's: a fail-closed store answers it while its backend is down (upstream-guarded-store.ts). */
export type UpstreamRejection = 'daily_budget' | 'max_wait' | 'reservations_full' | 'token_reservations_full' | 'unavailable';

export type UpstreamOutcome =
  | { readonly status: 'run'; readonly claimed: false }
  /** slotAtMs: the reservation this call claimed. */
  | { readonly status: 'run'; readonly claimed: true; readonly slotAtMs: number }
  | { readonly status: 'reserved'; readonly slotAtMs: number; readonly retryAfterMs: number }
  | { readonly status: 'rejected'; readonly reason: UpstreamRejection; readonly retryAfterMs: number };

export interface UpstreamScheduleResult {
  readonly outcome: UpstreamOutcome;
  /** The state to store; null = nothing to write. */
  readonly next: UpstreamState | null;
}

interface Exact {
  readonly ms: number;
  readonly rem: number;
}

/** ms + rem / denominator, one interval T later, carried on integers. */
function afterOneInterval(at: Exact, policy: UpstreamPolicy): Exact {
  const { numerator, denominator } = intervalOf(policy);
  const rem = at.rem + numerator;
  const carry = Math.floor(rem / denominator);
  return { ms: at.ms + carry, rem: rem - carry * denominator };
}

/** The first whole ms at or after the cursor. */
function ceilMs(at: Exact): number {
  return at.rem > 0 ? at.ms + 1 : at.ms;
}

function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** The reservations still claimable at nowMs, and the day's count less the units of those that expired. */
function prune(state: UpstreamState, nowMs: number, graceMs: number): { live: UpstreamReservation[]; count: number } {
  const live: UpstreamReservation[] = [];
  let count = state.count;
  for (const r of state.reservations) {
    if (nowMs <= r.slotAtMs + graceMs) live.push(r);
    else if (dayOf(r.slotAtMs) === state.day && count > 0) count -= 1;
  }
  return { live, count };
}

const EMPTY: UpstreamState = { cursorMs: 0, cursorRem: 0, day: 0, count: 0, reservations: [] };

/**
 * `claimSlotAtMs`: the slot the call says it was given (the reservation id it
 * echoes, decoded by the gateway), or null. It only ever selects among the
 * holder's own reservations, and the holder comes from the verified token, so
 * a made-up slot claims nothing it could not claim by echoing nothing.
 */
export function scheduleUpstream(state: UpstreamState | null, nowMs: number, holder: string, policy: UpstreamPolicy, claimSlotAtMs: number | null = null): UpstreamScheduleResult {
  const s = state ?? EMPTY;
  const { live, count } = prune(s, nowMs, policy.graceMs);
  // What a call that grants nothing writes: the lapses it saw, or nothing.
  const lapsed: UpstreamState | null = live.length === s.reservations.length ? null : { ...s, count, reservations: live };

  const mine = live.filter((r) => r.holder === holder);
  // Reservations are in slot order, so the first whose slot has come is the oldest claimable.
  const target = mine.find((r) => r.slotAtMs === claimSlotAtMs) ?? mine.find((r) => r.slotAtMs <= nowMs);
  if (target !== undefined) {
    if (nowMs < target.slotAtMs) {
      return { outcome: { status: 'reserved', slotAtMs: target.slotAtMs, retryAfterMs: target.slotAtMs - nowMs }, next: lapsed };
    }
    const rest = live.filter((r) => r !== target);
    return { outcome: { status: 'run', claimed: true, slotAtMs: target.slotAtMs }, next: { ...s, count, reservations: rest } };
  }

  const cursor: Exact = { ms: s.cursorMs, rem: s.cursorRem };
  const slotAtMs = Math.max(ceilMs(cursor), nowMs);
  // Slots are handed out in time order, so a grant's day is never before the stored one;
  // a hand-edited state that says otherwise is counted against the stored day.
  const slotDay = dayOf(slotAtMs);
  const day = Math.max(slotDay, s.day);
  const spent = slotDay > s.day ? 0 : count;
  const waitMs = slotAtMs - nowMs;

  if (policy.dailyBudget > 0 && spent >= policy.dailyBudget) {
    return { outcome: { status: 'rejected', reason: 'daily_budget', retryAfterMs: (day + 1) * DAY_MS - nowMs }, next: lapsed };
  }
  if (waitMs > policy.maxWaitMs) {
    return { outcome: { status: 'rejected', reason: 'max_wait', retryAfterMs: waitMs - policy.maxWaitMs }, next: lapsed };
  }
  if (waitMs === 0) {
    const next = afterOneInterval({ ms: nowMs, rem: 0 }, policy);
    return { outcome: { status: 'run', claimed: false }, next: { cursorMs: next.ms, cursorRem: next.rem, day, count: spent + 1, reservations: live } };
  }
  const oldestMine = mine[0];
  if (oldestMine !== undefined && mine.length >= policy.maxReservationsPerHolder) {
    // None of the holder's slots has come (else it was claimed above): a call that echoes nothing claims the oldest from its slot on.
    return { outcome: { status: 'rejected', reason: 'token_reservations_full', retryAfterMs: Math.max(1, oldestMine.slotAtMs - nowMs) }, next: lapsed };
  }
  const first = live[0];
  if (first !== undefined && live.length >= policy.maxReservations) {
    // The earliest reservation is gone by then at the latest: claimed, or expired.
    return { outcome: { status: 'rejected', reason: 'reservations_full', retryAfterMs: Math.max(1, first.slotAtMs + policy.graceMs + 1 - nowMs) }, next: lapsed };
  }
  const next = afterOneInterval({ ms: slotAtMs + policy.graceMs, rem: 0 }, policy);
  return {
    outcome: { status: 'reserved', slotAtMs, retryAfterMs: waitMs },
    next: { cursorMs: next.ms, cursorRem: next.rem, day, count: spent + 1, reservations: [...live, { holder, slotAtMs }] },
  };
}

/**
 * Epoch ms from which the state is equivalent to empty for every caller: the
 * cursor has passed, every reservation has expired, and the day it counts has
 * ended. For TTLs.
 */
export function upstreamStateExpiresAtMs(state: UpstreamState, policy: UpstreamPolicy): number {
  let at = ceilMs({ ms: state.cursorMs, rem: state.cursorRem });
  for (const r of state.reservations) at = Math.max(at, r.slotAtMs + policy.graceMs + 1);
  if (policy.dailyBudget > 0 && state.count > 0) at = Math.max(at, (state.day + 1) * DAY_MS);
  return at;
}
