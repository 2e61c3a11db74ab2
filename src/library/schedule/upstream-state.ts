/**
 * The shared upstream quota's stored state: one cursor, a day's count, and
 * the reservations outstanding. Integers and holder ids only, as one compact
 * string (the form RTDB keeps as its node; Redis keeps the head, before the
 * first comma, as its value and the reservations in sorted sets beside it,
 * docs/adr/0063-upstream-reservations-in-sorted-sets.md):
 *
 *   "cursorMs:cursorRem:day:count" then ",holder:slotAtMs" per reservation
 *
 * - cursor = cursorMs + cursorRem / (limit × headroomBp) ms: the earliest
 *   instant the next slot may be handed out (virtual scheduling, GCRA's TAT);
 * - day = floor(ms / 86 400 000) of the latest slot handed out (a UTC day),
 *   count = the slots handed out for that day, less reservations that expired
 *   unclaimed;
 * - reservations in the order they were made, which is slot order (the
 *   cursor only moves forward); at most `maxReservations` of them.
 *
 * Junk parses to null (empty), so a hand-edited node never breaks a decision.
 *
 * A state a store answers may be a view cut short (the Redis store lists its
 * first UPSTREAM_VIEW_LIMIT reservations, so its cost per call does not grow
 * with the number held): `omitted` then counts the later ones it leaves out,
 * all after the last listed slot. Formatting a view drops them.
 */
export interface UpstreamReservation {
  /** holderIdOf(token id, tool): never the token id itself, never client input. */
  readonly holder: string;
  readonly slotAtMs: number;
}

export interface UpstreamState {
  readonly cursorMs: number;
  readonly cursorRem: number;
  readonly day: number;
  readonly count: number;
  readonly reservations: readonly UpstreamReservation[];
  /** Set (> 0) only on a view cut short: reservations held after the listed ones and not listed. */
  readonly omitted?: number;
}

const HEAD = /^(\d{1,16}):(\d{1,16}):(\d{1,16}):(\d{1,16})$/;
// A holder id: upstream-holder.ts makes 16 base64url characters; up to 64 are read back.
const ENTRY = /^([A-Za-z0-9_-]{1,64}):(\d{1,16})$/;

export function formatUpstreamState(state: UpstreamState): string {
  let value = `${state.cursorMs}:${state.cursorRem}:${state.day}:${state.count}`;
  for (const r of state.reservations) value += `,${r.holder}:${r.slotAtMs}`;
  return value;
}

function safe(digits: string): number | null {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : null;
}

export function parseUpstreamState(value: string | null): UpstreamState | null {
  if (value === null) return null;
  const parts = value.split(',');
  const head = HEAD.exec(parts[0] as string); // split always gives at least one part
  if (head === null) return null;
  const numbers = head.slice(1).map(safe);
  if (numbers.some((n) => n === null)) return null;
  const [cursorMs, cursorRem, day, count] = numbers as [number, number, number, number];
  const reservations: UpstreamReservation[] = [];
  for (const part of parts.slice(1)) {
    const entry = ENTRY.exec(part);
    if (entry === null) return null;
    const slotAtMs = safe(entry[2] as string);
    if (slotAtMs === null) return null;
    reservations.push({ holder: entry[1] as string, slotAtMs });
  }
  return { cursorMs, cursorRem, day, count, reservations };
}
