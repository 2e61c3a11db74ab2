/**
 * "15/min", "2/s", "1000/h", "5000/day": calls an upstream allows per window,
 * as UPSTREAM_RATE and the limits file's `upstream.tools` write it.
 */
const RATE = /^(\d{1,7})\s*\/\s*(s|sec|second|min|minute|h|hour|d|day)$/i;
const RATE_UNIT_MS: Readonly<Record<string, number>> = { s: 1000, sec: 1000, second: 1000, min: 60_000, minute: 60_000, h: 3_600_000, hour: 3_600_000, d: 86_400_000, day: 86_400_000 };

export const UPSTREAM_RATE_EXPECTED = 'expected calls/unit with 1 to 1000000 calls and a unit of s, min, h or day, e.g. "15/min"';

export interface UpstreamRate {
  readonly limit: number;
  readonly windowMs: number;
}

/** The rate, or undefined when the text is not one. */
export function parseUpstreamRate(text: string): UpstreamRate | undefined {
  const match = RATE.exec(text);
  const windowMs = match ? RATE_UNIT_MS[(match[2] as string).toLowerCase()] : undefined;
  const limit = match ? Number(match[1]) : 0;
  return windowMs === undefined || limit < 1 || limit > 1_000_000 ? undefined : { limit, windowMs };
}
