import { z } from 'zod';
import { ALGORITHM_NAMES, type AlgorithmName } from '../limiter/algorithms/algorithm';
import { assertValidPolicySet, MAX_POLICIES_PER_SET, type RateLimitPolicy } from '../limiter/policy';
import type { ConfigProblem } from './config-error';
import type { Tier } from './tier';

/**
 * LIMITS_FILE: tiers with several limits each, in JSON.
 *
 *   { "tiers": { "pro": { "limits": [
 *       { "algorithm": "token-bucket", "limit": 60, "window": "1m", "burst": 10 },
 *       { "limit": 10000, "window": "1d" } ] } } }
 *
 * Every field is checked at boot and each problem names its path in the file
 * and the fix. The top level is an object so that later sections (rules per
 * tool, costs) sit beside `tiers` without breaking files written today;
 * unknown fields are refused, not ignored, so a typo never silently drops a
 * limit.
 */

const DURATION = /^([1-9]\d{0,8})(s|m|h|d)$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** "30s", "1m", "1h", "1d" → ms; undefined when not such a duration. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  return match === null ? undefined : Number(match[1]) * (UNIT_MS[match[2] as string] as number);
}

const limitSchema = z
  .object({
    name: z.string().regex(NAME, { error: 'expected 1-64 characters of A-Z a-z 0-9 _ -' }).optional(),
    algorithm: z.enum(ALGORITHM_NAMES as [AlgorithmName, ...AlgorithmName[]], { error: `expected one of ${ALGORITHM_NAMES.join(', ')}` }).optional(),
    limit: z.number({ error: 'expected a whole number of calls' }).int({ error: 'expected a whole number of calls' }).min(1, { error: 'expected at least 1' }),
    window: z.string({ error: 'expected a duration such as "1s", "1m", "1h" or "1d"' }).refine((s) => parseDuration(s) !== undefined, {
      error: 'expected a duration such as "1s", "1m", "1h" or "1d" (a whole number and one unit)',
    }),
    burst: z.number({ error: 'expected a whole number of calls' }).int({ error: 'expected a whole number of calls' }).min(1, { error: 'expected at least 1' }).optional(),
  })
  .strict();

const tierSchema = z
  .object({
    limits: z.array(limitSchema, { error: 'expected a list of limits' }).min(1, { error: 'a tier needs at least one limit' }).max(MAX_POLICIES_PER_SET, {
      error: `a tier holds at most ${MAX_POLICIES_PER_SET} limits`,
    }),
  })
  .strict();

const fileSchema = z
  .object({
    tiers: z.record(z.string(), tierSchema, { error: 'expected an object of tiers by name' }),
  })
  .strict();

export interface LimitsFileDefaults {
  /** RATE_LIMIT_ALGORITHM: the algorithm of a limit that names none. */
  readonly algorithm: AlgorithmName;
}

export type LimitsFileResult = { readonly ok: true; readonly tiers: readonly Tier[] } | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

const FIX = 'correct that field in LIMITS_FILE (docs/limits-file.md shows every field), or unset LIMITS_FILE';

/** Parses the file's text into tiers, or every problem in it, each naming its field. */
export function parseLimitsFile(text: string, defaults: LimitsFileDefaults): LimitsFileResult {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return fail('the file is not valid JSON', `${(error as Error).message}; fix the JSON syntax`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map((issue) => ({
        knob: 'LIMITS_FILE',
        problem: `${fieldPath(issue.path)}: ${issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` : issue.message}`,
        fix: FIX,
      })),
    };
  }
  const tiers: Tier[] = [];
  const problems: ConfigProblem[] = [];
  for (const [tierName, tier] of Object.entries(parsed.data.tiers)) {
    // Checked here, not by the schema: zod reports a bad record key with the record's own message.
    if (!NAME.test(tierName)) {
      problems.push({ knob: 'LIMITS_FILE', problem: `tiers.${tierName}: a tier name is 1-64 characters of A-Z a-z 0-9 _ -`, fix: 'rename the tier (tokens name it with --tier)' });
      continue;
    }
    const policies: RateLimitPolicy[] = tier.limits.map((limit) => {
      const windowMs = parseDuration(limit.window) as number;
      const algorithm = limit.algorithm ?? defaults.algorithm;
      return {
        name: limit.name ?? (tier.limits.length === 1 ? tierName : `${tierName}-${limit.window}`),
        algorithm,
        limit: limit.limit,
        windowMs,
        ...(limit.burst !== undefined ? { burst: limit.burst } : {}),
      };
    });
    tier.limits.forEach((limit, i) => {
      const algorithm = limit.algorithm ?? defaults.algorithm;
      if (limit.burst !== undefined && algorithm !== 'token-bucket' && algorithm !== 'leaky-bucket') {
        problems.push({
          knob: 'LIMITS_FILE',
          problem: `tiers.${tierName}.limits[${i}].burst: only token-bucket and leaky-bucket have a burst, this limit is ${algorithm}`,
          fix: 'remove "burst", or set "algorithm" to token-bucket or leaky-bucket',
        });
      }
    });
    try {
      assertValidPolicySet(policies);
      tiers.push({ name: tierName, policies });
    } catch (error) {
      problems.push({ knob: 'LIMITS_FILE', problem: `tiers.${tierName}: ${(error as Error).message}`, fix: FIX });
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, tiers };
}

function fail(problem: string, fix: string): LimitsFileResult {
  return { ok: false, problems: [{ knob: 'LIMITS_FILE', problem, fix }] };
}

function fieldPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(the whole file)';
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('');
}
