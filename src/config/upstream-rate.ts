/**
 * "15/min", "2/s", "1000/h", "5000/day": calls an upstream allows per window,
 * as UPSTREAM_RATE and the limits file's `upstream.tools` write it.
 */
const RATE = /^(\d{1,7})\s*\/\s*(s|sec|second|min|minute|h|hour|d|day)$/i;
const RATE_UNIT_MS: Readonly<Record<string, number>> = { s: 1000, sec: 1000, second: 1000, min: 60_000, minute: 60_000, h: 3_600_000, hour: 3_600_000, d: 86_400_000, day: 86_400_000 };

/** The most calls per window a rate may give; resolveUpstreamPolicy's bound. */
export const MAX_UPSTREAM_RATE_LIMIT = 1_000_000;

export const UPSTREAM_RATE_EXPECTED = 'expected calls/unit with 1 to 1000000 calls and a unit of s, min, h or day, e.g. "15/min"';

export interface UpstreamRate {
  readonly limit: number;
  readonly windowMs: number;
}

/** The rate, or undefined when the text is not one. */
export function parseUpstreamRate(text: string): UpstreamRate | undefined {
  const match = RATE.exec(text);
  if (match === null) return undefined;
  const limit = Number(match[1]);
  // The pattern admits only the units the table has.
  return limit < 1 || limit > MAX_UPSTREAM_RATE_LIMIT ? undefined : { limit, windowMs: RATE_UNIT_MS[(match[2] as string).toLowerCase()] as number };
}

/** A headroom the scheduler holds exactly: a whole number of basis points (UPSTREAM_HEADROOM, a tool quota's `headroom`). */
export function hasAtMostFourDecimals(fraction: number): boolean {
  return Math.abs(Math.round(fraction * 10_000) - fraction * 10_000) < 1e-6;
}
