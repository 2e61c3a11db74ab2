import { z } from 'zod';
import { formatPath, parseStrictJson } from '../shared/strict-json';
import { type AlgorithmName, assertValidPolicySet, MAX_POLICIES_PER_SET } from '../library';
import { limitSchema, NAME, policiesOf } from './limit-schema';
import type { ConfigProblem } from './config-error';
import { costsSchema, parsedRules, rulesSchema, type ParsedRule } from './rules-section';
import type { Tier } from './tier';
import { upstreamSectionSchema, upstreamToolQuotasOf, type UpstreamToolQuotaEntry } from './upstream-section';
import { upstreamCostsOf, type UpstreamCosts } from './upstream-costs';

/**
 * LIMITS_FILE: tiers with several limits each, in JSON.
 *
 *   { "tiers": { "pro": { "limits": [
 *       { "algorithm": "token-bucket", "limit": 60, "window": "1m", "burst": 10 },
 *       { "limit": 10000, "window": "1d" } ] } } }
 *
 * Beside `tiers`: `costs` (units per tool), `rules` (costs and extra
 * limits per method, tool, tier or token; rules-section.ts) and `upstream`
 * (quotas of the upstream's own tools; upstream-section.ts). Every field is
 * checked at boot and each problem names its path in the file and the fix;
 * unknown fields are refused, not ignored, so a typo never silently drops a
 * limit.
 */

/** Far above what a file of tiers and rules needs; bounded so a runaway file is a clear refusal, not a slow boot or a stack overflow. */
export const LIMITS_FILE_MAX_BYTES = 1_048_576;
export const LIMITS_FILE_MAX_DEPTH = 32;

const FIX = 'correct that field in LIMITS_FILE (docs/limits-file.md shows every field), or unset LIMITS_FILE';

const tierSchema = z
  .object({
    limits: z.array(limitSchema, { error: 'expected a list of limits' }).min(1, { error: 'a tier needs at least one limit' }).max(MAX_POLICIES_PER_SET, {
      error: `a tier holds at most ${MAX_POLICIES_PER_SET} limits`,
    }),
  })
  .strict();

const fileSchema = z
  .object({
    tiers: z.record(z.string(), tierSchema, { error: 'expected an object of tiers by name' }).default({}),
    costs: costsSchema.optional(),
    rules: rulesSchema.optional(),
    upstream: upstreamSectionSchema.optional(),
  })
  .strict();

export interface LimitsFileDefaults {
  /** RATE_LIMIT_ALGORITHM: the algorithm of a limit that names none. */
  readonly algorithm: AlgorithmName;
}

export type LimitsFileResult =
  | {
      readonly ok: true;
      readonly tiers: readonly Tier[];
      readonly costs: ReadonlyMap<string, number>;
      readonly rules: readonly ParsedRule[];
      /** `upstream.tools`: a tool's own upstream quota, by tool name. */
      readonly upstreamTools: ReadonlyMap<string, UpstreamToolQuotaEntry>;
      /** `upstream.costs`: what a forwarded request costs on the shared upstream quota. */
      readonly upstreamCosts: UpstreamCosts;
    }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };


/** Parses the file's text into tiers, or every problem in it, each naming its field. */
export { parseDuration } from './limit-schema';

export function parseLimitsFile(text: string, defaults: LimitsFileDefaults): LimitsFileResult {
  const read = parseStrictJson(text, { maxDepth: LIMITS_FILE_MAX_DEPTH, maxBytes: LIMITS_FILE_MAX_BYTES, plainNumbers: true });
  if (!read.ok) {
    return read.line === undefined
      ? fail(`the file is ${read.problem}`, 'keep the file under 1 MiB: a limits file holds tiers and rules, not data')
      : fail(`the file is not valid JSON: ${read.problem}`, 'fix the file at that line and column (docs/limits-file.md shows every field)');
  }
  const json = read.value;
  const reserved = pathOfKey(json, '__proto__', []);
  if (reserved !== undefined) {
    // The schema would drop such a key without a word: a tier, cost or quota named so would silently not exist.
    return fail(`${fieldPath(reserved)}: "__proto__" cannot name a tier, tool or rule`, 'choose another name');
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
    const policies = policiesOf(tier.limits, tierName, `tiers.${tierName}`, defaults, problems);
    try {
      assertValidPolicySet(policies);
      tiers.push({ name: tierName, policies });
    } catch (error) {
      problems.push({ knob: 'LIMITS_FILE', problem: `tiers.${tierName}: ${(error as Error).message}`, fix: FIX });
    }
  }
  const rules = parsedRules(parsed.data.rules ?? [], defaults, problems);
  const costs = new Map(Object.entries(parsed.data.costs ?? {}));
  const upstreamTools = upstreamToolQuotasOf(parsed.data.upstream, problems);
  const upstreamCosts = upstreamCostsOf(parsed.data.upstream?.costs, problems);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, tiers, costs, rules, upstreamTools, upstreamCosts };
}

/** The path of the first object holding `key` as its own property, or undefined. */
function pathOfKey(value: unknown, key: string, at: PropertyKey[]): PropertyKey[] | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (Object.prototype.hasOwnProperty.call(value, key)) return [...at, key];
  for (const [name, child] of Object.entries(value)) {
    const found = pathOfKey(child, key, [...at, Array.isArray(value) ? Number(name) : name]);
    if (found !== undefined) return found;
  }
  return undefined;
}

function fail(problem: string, fix: string): LimitsFileResult {
  return { ok: false, problems: [{ knob: 'LIMITS_FILE', problem, fix }] };
}

const fieldPath = formatPath;
