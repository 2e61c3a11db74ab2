/**
 * The reservation id a "reserved" answer hands out and a returning call
 * echoes in `params._meta["firelimit/reservation"]`: which quota key and
 * which slot it was told. Opaque to clients (a version, then base64url), but
 * not a secret and not signed: the store matches it only among the
 * reservations of the caller's own verified token (upstream-holder.ts), so a
 * forged or copied id can at most pick one of the token's own slots, which
 * echoing nothing would claim as well (docs/adr/0053-one-slot-per-call.md).
 */

/** Where a returning call echoes the id. */
export const RESERVATION_META_KEY = 'firelimit/reservation';

const PREFIX = 'r1.';
/** Quota keys are config-made ("upstream", "tool:<encoded name>"); the slot is epoch ms. */
const BODY = /^([A-Za-z0-9:%._~-]{1,300})\|(\d{1,16})$/;

export interface ReservationRef {
  readonly key: string;
  readonly slotAtMs: number;
}

export function formatReservationId(ref: ReservationRef): string {
  return PREFIX + Buffer.from(`${ref.key}|${ref.slotAtMs}`).toString('base64url');
}

/** The key and slot an echoed id names; undefined for anything that is not one of ours (ignored: the call is then one that echoes nothing). */
export function parseReservationId(value: unknown): ReservationRef | undefined {
  if (typeof value !== 'string' || value.length > 450 || !value.startsWith(PREFIX)) return undefined;
  const body = value.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(body)) return undefined;
  const match = BODY.exec(Buffer.from(body, 'base64url').toString('utf8'));
  if (match === null) return undefined;
  const slotAtMs = Number(match[2]);
  return Number.isSafeInteger(slotAtMs) ? { key: match[1] as string, slotAtMs } : undefined;
}
