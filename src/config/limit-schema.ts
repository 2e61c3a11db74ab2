import { z } from 'zod';
import { ALGORITHM_NAMES, type AlgorithmName, type RateLimitPolicy } from '../library';
import type { ConfigProblem } from './config-error';

/** One limit as the limits file writes it, shared by tiers and rules. */

const DURATION = /^([1-9]\d{0,8})(s|m|h|d)$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
export const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The largest `limit` or `burst` a file may give, as RATE_LIMIT_PER_MINUTE's: far past any real quota, and exact in every store's arithmetic. */
export const MAX_LIMIT = 1_000_000_000;
/** The longest `window` a file may give: a year and a day, so a yearly quota fits and a window in the millions of days (which booted) does not. */
export const MAX_WINDOW = '366d';
export const MAX_WINDOW_MS = 366 * 86_400_000;

/** "30s", "1m", "1h", "1d" → ms; undefined when not such a duration. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  return match === null ? undefined : Number(match[1]) * (UNIT_MS[match[2] as string] as number);
}

const calls = z
  .number({ error: 'expected a whole number of calls' })
  .int({ error: 'expected a whole number of calls' })
  .min(1, { error: 'expected at least 1' })
  .max(MAX_LIMIT, { error: `expected at most ${MAX_LIMIT} (the largest accepted)` });

export const limitSchema = z
  .object({
    name: z.string().regex(NAME, { error: 'expected 1-64 characters of A-Z a-z 0-9 _ -' }).optional(),
    algorithm: z.enum(ALGORITHM_NAMES as [AlgorithmName, ...AlgorithmName[]], { error: `expected one of ${ALGORITHM_NAMES.join(', ')}` }).optional(),
    limit: calls,
    window: z
      .string({ error: 'expected a duration such as "1s", "1m", "1h" or "1d"' })
      .refine((s) => parseDuration(s) !== undefined, { error: 'expected a duration such as "1s", "1m", "1h" or "1d" (a whole number and one unit)', abort: true })
      .refine((s) => (parseDuration(s) as number) <= MAX_WINDOW_MS, { error: `expected at most ${MAX_WINDOW} (the longest window accepted)` }),
    burst: calls.optional(),
  })
  .strict();

export type LimitEntry = z.output<typeof limitSchema>;

/**
 * A list of limits as policies: unnamed ones take `baseName` alone (one
 * limit) or `baseName-window`. A burst on a window algorithm is a problem
 * pushed under `path`.
 */
export function policiesOf(limits: readonly LimitEntry[], baseName: string, path: string, defaults: { readonly algorithm: AlgorithmName }, problems: ConfigProblem[]): RateLimitPolicy[] {
  return limits.map((limit, i) => {
    const algorithm = limit.algorithm ?? defaults.algorithm;
    if (limit.burst !== undefined && algorithm !== 'token-bucket' && algorithm !== 'leaky-bucket') {
      problems.push({
        knob: 'LIMITS_FILE',
        problem: `${path}.limits[${i}].burst: only token-bucket and leaky-bucket have a burst, this limit is ${algorithm}`,
        fix: 'remove "burst", or set "algorithm" to token-bucket or leaky-bucket',
      });
    }
    return {
      name: limit.name ?? (limits.length === 1 ? baseName : `${baseName}-${limit.window}`),
      algorithm,
      limit: limit.limit,
      windowMs: parseDuration(limit.window) as number,
      ...(limit.burst !== undefined ? { burst: limit.burst } : {}),
    };
  });
}

