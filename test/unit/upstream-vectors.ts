import type { UpstreamPolicy } from '../../src/library/schedule/upstream-policy';
import type { UpstreamOutcome } from '../../src/library/schedule/upstream-schedule';
import type { UpstreamState } from '../../src/library/schedule/upstream-state';

/**
 * The table that holds scheduleUpstream (src/library/schedule/) and its Lua
 * twin (src/library/backends/redis/lua/upstream-schedule.ts) together:
 * test/unit/upstream/upstream-schedule.test.ts runs every row through the
 * TypeScript function, test/integration/upstream-lua-twin.test.ts through both
 * it and the script on a real redis-server. Data only; the arithmetic is in
 * the comments, worked out by hand.
 */
export interface UpstreamVector {
  readonly name: string;
  readonly state: UpstreamState | null;
  readonly nowMs: number;
  readonly holder: string;
  /** The slot the call echoes (its reservation id, decoded); absent: none. */
  readonly claimSlotAtMs?: number;
  readonly policy: UpstreamPolicy;
  readonly outcome: UpstreamOutcome;
  /** The state written afterwards; null = nothing written. */
  readonly next: UpstreamState | null;
}

/** 2023-11-14 22:13:20.123 UTC: day 19675 (19675 × 86 400 000 = 1 699 920 000 000), 6 399 877 ms before the next. */
const E = 1_700_000_000_123;
const DAY = 19_675;
const NEXT_DAY_MS = 1_700_006_400_000;
const A = 'AAAAAAAAAAAAAAAA';
const B = 'BBBBBBBBBBBBBBBB';
const C = 'CCCCCCCCCCCCCCCC';
const D = 'DDDDDDDDDDDDDDDD';
const H3 = 'h3h3h3h3h3h3h3h3';

/**
 * 15 a minute at headroom 0.9: T = 60 000 × 10 000 / (15 × 9000) = 600 000 000 / 135 000 ms
 * = 4444 ms and 60 000 / 135 000 (4444 × 135 000 = 599 940 000). One interval after a whole
 * ms t is { t + 4444, rem 60 000 }, whose first whole ms is t + 4445.
 */
const P: UpstreamPolicy = { limit: 15, windowMs: 60_000, headroomBp: 9000, maxWaitMs: 60_000, dailyBudget: 0, graceMs: 1000, maxReservations: 100, maxReservationsPerHolder: 100 };

/** The policy of the counterexample fast-check found (issue 19). */
const Q: UpstreamPolicy = { limit: 17, windowMs: 60_000, headroomBp: 10_000, maxWaitMs: 1663, dailyBudget: 2, graceMs: 0, maxReservations: 1, maxReservationsPerHolder: 1 };

/** After A ran at E. */
const AFTER_RUN: UpstreamState = { cursorMs: E + 4444, cursorRem: 60_000, day: DAY, count: 1, reservations: [] };
/** Then B, same ms: slot E + 4445, claimable until E + 5445, cursor E + 5445 + T = { E + 9889, 60 000 }. */
const B_RESERVED: UpstreamState = { cursorMs: E + 9889, cursorRem: 60_000, day: DAY, count: 2, reservations: [{ holder: B, slotAtMs: E + 4445 }] };
/** Then C, same ms: slot E + 9890, cursor E + 10 890 + T = { E + 15 334, 60 000 }. */
const BC_RESERVED: UpstreamState = {
  cursorMs: E + 15_334,
  cursorRem: 60_000,
  day: DAY,
  count: 3,
  reservations: [
    { holder: B, slotAtMs: E + 4445 },
    { holder: C, slotAtMs: E + 9890 },
  ],
};

/** B's two calls queued (issue 17 item 4: one slot per call): E + 4445 and E + 9890, cursor as BC_RESERVED. */
const BB_RESERVED: UpstreamState = { ...BC_RESERVED, reservations: [{ holder: B, slotAtMs: E + 4445 }, { holder: B, slotAtMs: E + 9890 }] };

export const UPSTREAM_VECTORS: readonly UpstreamVector[] = [
  {
    name: 'the first caller on an empty key runs now; the cursor moves one interval on',
    state: null, nowMs: E, holder: A, policy: P,
    outcome: { status: 'run', claimed: false },
    next: AFTER_RUN,
  },
  {
    name: 'a second caller in the same millisecond is given the next slot, one interval (rounded up to a whole ms) later',
    state: AFTER_RUN, nowMs: E, holder: B, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 4445, retryAfterMs: 4445 },
    next: B_RESERVED,
  },
  {
    name: 'a third caller in the same millisecond queues after the second one\'s grace',
    state: B_RESERVED, nowMs: E, holder: C, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 9890, retryAfterMs: 9890 },
    next: BC_RESERVED,
  },
  {
    name: 'a holder back early, echoing its slot, is told its own slot again, and nothing is written',
    state: B_RESERVED, nowMs: E + 2000, holder: B, claimSlotAtMs: E + 4445, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 4445, retryAfterMs: 2445 },
    next: null,
  },
  {
    name: 'a matured reservation runs at its slot without taking a new one',
    state: B_RESERVED, nowMs: E + 4445, holder: B, policy: P,
    outcome: { status: 'run', claimed: true, slotAtMs: E + 4445 },
    next: { cursorMs: E + 9889, cursorRem: 60_000, day: DAY, count: 2, reservations: [] },
  },
  {
    name: 'a reservation can still be claimed at the last ms of its grace',
    state: BC_RESERVED, nowMs: E + 5445, holder: B, policy: P,
    outcome: { status: 'run', claimed: true, slotAtMs: E + 4445 },
    next: { cursorMs: E + 15_334, cursorRem: 60_000, day: DAY, count: 3, reservations: [{ holder: C, slotAtMs: E + 9890 }] },
  },
  {
    name: 'one ms after its grace the reservation has expired: its slot is lost, its budget unit given back, and the holder queues afresh',
    // count 2 − 1 (B expired) + 1 (B's new slot at the cursor, E + 9890); cursor E + 10 890 + T.
    state: B_RESERVED, nowMs: E + 5446, holder: B, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 9890, retryAfterMs: 4444 },
    next: { cursorMs: E + 15_334, cursorRem: 60_000, day: DAY, count: 2, reservations: [{ holder: B, slotAtMs: E + 9890 }] },
  },
  {
    name: 'someone else\'s matured reservation is not the caller\'s: it queues at the cursor',
    state: B_RESERVED, nowMs: E + 4445, holder: C, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 9890, retryAfterMs: 5445 },
    next: BC_RESERVED,
  },
  {
    name: 'a slot farther than maxWaitMs is rejected, retryable exactly when it comes within reach, and nothing is written',
    // slot E + 9890 is 9890 away; within 5000 from E + 4890 on.
    state: B_RESERVED, nowMs: E, holder: C, policy: { ...P, maxWaitMs: 5000 },
    outcome: { status: 'rejected', reason: 'max_wait', retryAfterMs: 4890 },
    next: null,
  },
  {
    name: 'with the day\'s budget spent, a caller is rejected until the next UTC day',
    state: B_RESERVED, nowMs: E, holder: C, policy: { ...P, dailyBudget: 2 },
    outcome: { status: 'rejected', reason: 'daily_budget', retryAfterMs: NEXT_DAY_MS - E },
    next: null,
  },
  {
    name: 'the budget starts again on the next UTC day',
    state: { cursorMs: E, cursorRem: 0, day: DAY, count: 2, reservations: [] }, nowMs: NEXT_DAY_MS, holder: C, policy: { ...P, dailyBudget: 2 },
    outcome: { status: 'run', claimed: false },
    next: { cursorMs: NEXT_DAY_MS + 4444, cursorRem: 60_000, day: DAY + 1, count: 1, reservations: [] },
  },
  {
    name: 'an expired reservation gives its unit back to a spent budget, so the next caller fits',
    state: B_RESERVED, nowMs: E + 5446, holder: C, policy: { ...P, dailyBudget: 2 },
    outcome: { status: 'reserved', slotAtMs: E + 9890, retryAfterMs: 4444 },
    next: { cursorMs: E + 15_334, cursorRem: 60_000, day: DAY, count: 2, reservations: [{ holder: C, slotAtMs: E + 9890 }] },
  },
  {
    name: 'at the cap of outstanding reservations a caller who would wait is rejected until the earliest one is surely gone',
    // B's slot E + 4445 expires after E + 5445: 5446 ms from E.
    state: BC_RESERVED, nowMs: E, holder: D, policy: { ...P, maxReservations: 2 },
    outcome: { status: 'rejected', reason: 'reservations_full', retryAfterMs: 5446 },
    next: null,
  },
  {
    name: 'at the cap, a caller whose slot is now still runs: a run adds no reservation',
    state: { ...BC_RESERVED, cursorMs: E, cursorRem: 0, reservations: BC_RESERVED.reservations }, nowMs: E + 5000, holder: D, policy: { ...P, maxReservations: 2 },
    outcome: { status: 'run', claimed: false },
    next: { cursorMs: E + 9444, cursorRem: 60_000, day: DAY, count: 4, reservations: BC_RESERVED.reservations },
  },
  {
    name: 'a clock behind the cursor is told to wait for the slot, never run early',
    state: AFTER_RUN, nowMs: E - 3000, holder: B, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 4445, retryAfterMs: 7445 },
    next: B_RESERVED,
  },
  {
    name: 'a holder whose clock is behind its slot, echoing it, is told to wait the rest',
    state: B_RESERVED, nowMs: E + 4000, holder: B, claimSlotAtMs: E + 4445, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 4445, retryAfterMs: 445 },
    next: null,
  },
  {
    name: 'a cursor long past runs the caller now, from now (idle time is not banked)',
    state: { cursorMs: E - 100_000, cursorRem: 5, day: DAY, count: 7, reservations: [] }, nowMs: E, holder: A, policy: P,
    outcome: { status: 'run', claimed: false },
    next: { cursorMs: E + 4444, cursorRem: 60_000, day: DAY, count: 8, reservations: [] },
  },
  {
    name: 'headroom 1 and a whole-ms interval: 2/s is one slot every 500 ms, after the 1000 ms grace',
    state: { cursorMs: E + 500, cursorRem: 0, day: DAY, count: 1, reservations: [] }, nowMs: E, holder: B,
    policy: { ...P, limit: 2, windowMs: 1000, headroomBp: 10_000 },
    outcome: { status: 'reserved', slotAtMs: E + 500, retryAfterMs: 500 },
    next: { cursorMs: E + 2000, cursorRem: 0, day: DAY, count: 2, reservations: [{ holder: B, slotAtMs: E + 500 }] },
  },
  {
    name: 'grace 0: the next slot is one interval after the reservation, and it expires the ms after its slot',
    // cursor E + 4445 + T = { E + 8889, 60 000 }; at E + 4446 B has expired (count 2 − 1 = 1) and C takes E + 8890.
    state: { cursorMs: E + 8889, cursorRem: 60_000, day: DAY, count: 2, reservations: [{ holder: B, slotAtMs: E + 4445 }] }, nowMs: E + 4446, holder: C,
    policy: { ...P, graceMs: 0 },
    outcome: { status: 'reserved', slotAtMs: E + 8890, retryAfterMs: 4444 },
    next: { cursorMs: E + 13_334, cursorRem: 60_000, day: DAY, count: 2, reservations: [{ holder: C, slotAtMs: E + 8890 }] },
  },
  {
    name: 'a slot exactly maxWaitMs away is still handed out',
    state: B_RESERVED, nowMs: E + 4890, holder: C, policy: { ...P, maxWaitMs: 5000 },
    outcome: { status: 'reserved', slotAtMs: E + 9890, retryAfterMs: 5000 },
    next: BC_RESERVED,
  },
  {
    name: 'a slot that falls on the next UTC day is counted against that day, though today\'s budget is spent',
    // Today's 5 are spent; at 23:59:58 the cursor is 4445 ms into tomorrow, so C's slot is tomorrow's first.
    state: { cursorMs: NEXT_DAY_MS + 4444, cursorRem: 60_000, day: DAY, count: 5, reservations: [{ holder: B, slotAtMs: NEXT_DAY_MS - 1000 }] },
    nowMs: NEXT_DAY_MS - 2000, holder: C, policy: { ...P, dailyBudget: 5 },
    outcome: { status: 'reserved', slotAtMs: NEXT_DAY_MS + 4445, retryAfterMs: 6445 },
    next: {
      cursorMs: NEXT_DAY_MS + 5445 + 4444,
      cursorRem: 60_000,
      day: DAY + 1,
      count: 1,
      reservations: [
        { holder: B, slotAtMs: NEXT_DAY_MS - 1000 },
        { holder: C, slotAtMs: NEXT_DAY_MS + 4445 },
      ],
    },
  },
  {
    name: 'a reservation from the day before that expires gives nothing back to today\'s count',
    // B's slot was 10 ms before midnight (cursor then NEXT + 990 + T), D's the first after it: today's one.
    // D claims at its slot; B expired at NEXT + 991, but its unit was yesterday's.
    state: {
      cursorMs: NEXT_DAY_MS + 10_879,
      cursorRem: 60_000,
      day: DAY + 1,
      count: 1,
      reservations: [
        { holder: B, slotAtMs: NEXT_DAY_MS - 10 },
        { holder: D, slotAtMs: NEXT_DAY_MS + 5435 },
      ],
    },
    nowMs: NEXT_DAY_MS + 5435, holder: D, policy: P,
    outcome: { status: 'run', claimed: true, slotAtMs: NEXT_DAY_MS + 5435 },
    next: { cursorMs: NEXT_DAY_MS + 10_879, cursorRem: 60_000, day: DAY + 1, count: 1, reservations: [] },
  },
  {
    name: 'a hand-edited count of 0 is not taken below 0 by an expired reservation',
    state: { cursorMs: E + 9889, cursorRem: 60_000, day: DAY, count: 0, reservations: [{ holder: B, slotAtMs: E + 4445 }] },
    nowMs: E + 20_000, holder: A, policy: P,
    outcome: { status: 'run', claimed: false },
    next: { cursorMs: E + 24_444, cursorRem: 60_000, day: DAY, count: 1, reservations: [] },
  },
  // Found by fast-check (seed -1933903487, test/unit/upstream/upstream-schedule.test.ts, issue 19):
  // 17 a minute at headroom 1, grace 0, budget 2, maxWait 1663, cap 1, from 0. T = 600 000 000 / 170 000
  // = 3529 ms and 70 000 / 170 000. h0 ran at 0 (cursor {3529, 70 000}); h3 at 1867 was given 3530 (wait
  // 1663; cursor 3530 + T = {7059, 70 000}, count 2); h0 at 3080 was refused the budget. Then these two.
  {
    name: 'a caller who finds its own reservation lapsed and is rejected writes the lapse down, its unit given back',
    // At 4849 h3's 3530 has lapsed (count 2 − 1); its new slot 7060 is 2211 away, 548 past maxWait.
    state: { cursorMs: 7059, cursorRem: 70_000, day: 0, count: 2, reservations: [{ holder: H3, slotAtMs: 3530 }] }, nowMs: 4849, holder: H3, policy: Q,
    outcome: { status: 'rejected', reason: 'max_wait', retryAfterMs: 548 },
    next: { cursorMs: 7059, cursorRem: 70_000, day: 0, count: 1, reservations: [] },
  },
  {
    name: 'then a clock 1319 ms behind, back at the lapsed slot, holds nothing: it is a new caller, not a claim, and writes nothing',
    state: { cursorMs: 7059, cursorRem: 70_000, day: 0, count: 1, reservations: [] }, nowMs: 3530, holder: H3, policy: Q,
    outcome: { status: 'rejected', reason: 'max_wait', retryAfterMs: 1867 },
    next: null,
  },
  {
    name: 'a holder back early, echoing its slot, drops someone else\'s lapsed reservation as it is told its own slot again',
    // C's E + 1000 lapsed after E + 2000 (count 3 − 1); B's E + 4445 is still ahead.
    state: { ...BC_RESERVED, reservations: [{ holder: C, slotAtMs: E + 1000 }, { holder: B, slotAtMs: E + 4445 }] }, nowMs: E + 2001, holder: B, claimSlotAtMs: E + 4445, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 4445, retryAfterMs: 2444 },
    next: { ...BC_RESERVED, count: 2, reservations: [{ holder: B, slotAtMs: E + 4445 }] },
  },
  // One slot per call (issue 17 item 4, docs/adr/0053): a holder is a token, each waiting call has its own slot.
  {
    name: 'a second call of a holder whose first waits gets a slot of its own, not the first one\'s',
    state: B_RESERVED, nowMs: E, holder: B, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 9890, retryAfterMs: 9890 },
    next: BB_RESERVED,
  },
  {
    name: 'a call that echoes nothing claims its holder\'s oldest slot that has come',
    state: BB_RESERVED, nowMs: E + 4445, holder: B, policy: P,
    outcome: { status: 'run', claimed: true, slotAtMs: E + 4445 },
    next: { ...BB_RESERVED, reservations: [{ holder: B, slotAtMs: E + 9890 }] },
  },
  {
    name: 'a call that echoes its own later slot is told that slot, though an older one of its holder has come; nothing written',
    state: BB_RESERVED, nowMs: E + 5000, holder: B, claimSlotAtMs: E + 9890, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 9890, retryAfterMs: 4890 },
    next: null,
  },
  {
    name: 'a call that echoes its own slot at that slot runs on exactly it',
    state: BB_RESERVED, nowMs: E + 4445, holder: B, claimSlotAtMs: E + 4445, policy: P,
    outcome: { status: 'run', claimed: true, slotAtMs: E + 4445 },
    next: { ...BB_RESERVED, reservations: [{ holder: B, slotAtMs: E + 9890 }] },
  },
  {
    name: 'an echoed slot that is someone else\'s claims nothing of theirs: the call is new, and the other reservation stays',
    // At E + 9890 B's E + 4445 has lapsed (count 3 − 1); B queues at the cursor E + 15 335 (cursor then E + 16 335 + T).
    state: BC_RESERVED, nowMs: E + 9890, holder: B, claimSlotAtMs: E + 9890, policy: P,
    outcome: { status: 'reserved', slotAtMs: E + 15_335, retryAfterMs: 5445 },
    next: { cursorMs: E + 20_779, cursorRem: 60_000, day: DAY, count: 3, reservations: [{ holder: C, slotAtMs: E + 9890 }, { holder: B, slotAtMs: E + 15_335 }] },
  },
  {
    name: 'at its per-holder cap a holder that would wait is rejected until its oldest slot comes; nothing written',
    state: BB_RESERVED, nowMs: E, holder: B, policy: { ...P, maxReservationsPerHolder: 2 },
    outcome: { status: 'rejected', reason: 'token_reservations_full', retryAfterMs: 4445 },
    next: null,
  },
  {
    name: 'one holder at its cap does not stop another: the queue is shared, the cap is each token\'s',
    state: BB_RESERVED, nowMs: E, holder: C, policy: { ...P, maxReservationsPerHolder: 2 },
    outcome: { status: 'reserved', slotAtMs: E + 15_335, retryAfterMs: 15_335 },
    next: { cursorMs: E + 20_779, cursorRem: 60_000, day: DAY, count: 4, reservations: [...BB_RESERVED.reservations, { holder: C, slotAtMs: E + 15_335 }] },
  },
  {
    name: 'at its per-holder cap a holder whose slot is now still runs: a run adds no reservation',
    state: { ...BB_RESERVED, cursorMs: E, cursorRem: 0 }, nowMs: E + 100, holder: B, policy: { ...P, maxReservationsPerHolder: 2 },
    outcome: { status: 'run', claimed: false },
    next: { ...BB_RESERVED, cursorMs: E + 4544, cursorRem: 60_000, count: 4 },
  },
];
