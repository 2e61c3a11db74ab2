import { assertValidPolicySet, type RateLimitPolicy } from '../library';
import type { ConfigProblem } from './config-error';
import type { KnobValues } from './knobs';
import { parseLimitsFile } from './limits-file';
import type { PolicyRule } from '../policies/policy-rule';
import type { Tier } from './tier';
import { NO_UPSTREAM_COSTS, type UpstreamCosts } from './upstream-costs';
import type { UpstreamToolQuotaEntry } from './upstream-section';

const MINUTE_MS = 60_000;

/** The knobs that shape the default tier; naming "default" in LIMITS_FILE as well would leave two answers. */
const DEFAULT_TIER_KNOBS = ['RATE_LIMIT_PER_MINUTE', 'RATE_LIMIT_ALGORITHM', 'RATE_LIMIT_BURST'] as const;

/**
 * Every tier, the default first: `default` from RATE_LIMIT_PER_MINUTE,
 * RATE_LIMIT_ALGORITHM and RATE_LIMIT_BURST (or LIMITS_FILE's "default"), the
 * RATE_LIMIT_TIERS ones (same algorithm, each its own per-minute figure and a
 * burst of that figure), then LIMITS_FILE's. Problems are pushed, not thrown,
 * so one boot error lists them all.
 */
/** What the limits file adds beside its tiers (empty without a file). */
export interface FileSections {
  readonly costs: ReadonlyMap<string, number>;
  readonly rules: readonly PolicyRule[];
  readonly upstreamTools: ReadonlyMap<string, UpstreamToolQuotaEntry>;
  readonly upstreamCosts: UpstreamCosts;
}

const NO_SECTIONS: FileSections = { costs: new Map(), rules: [], upstreamTools: new Map(), upstreamCosts: NO_UPSTREAM_COSTS };

export function tiersOf(
  env: NodeJS.ProcessEnv,
  v: KnobValues,
  limitsFilePath: string,
  readFile: (filePath: string) => string,
  problems: ConfigProblem[],
): { tiers: Tier[]; file: FileSections } {
  const algorithm = v.RATE_LIMIT_ALGORITHM;
  const envDefault: RateLimitPolicy = {
    name: 'default',
    algorithm,
    limit: v.RATE_LIMIT_PER_MINUTE,
    windowMs: MINUTE_MS,
    ...(v.RATE_LIMIT_BURST !== undefined ? { burst: v.RATE_LIMIT_BURST } : {}),
  };
  let tiers: Tier[] = [
    { name: 'default', policies: [envDefault] },
    ...v.RATE_LIMIT_TIERS.map(({ name, perMinute }): Tier => ({ name, policies: [{ name, algorithm, limit: perMinute, windowMs: MINUTE_MS }] })),
  ];
  for (const tier of tiers) {
    try {
      assertValidPolicySet(tier.policies);
    } catch (error) {
      problems.push({
        knob: tier.name === 'default' ? 'RATE_LIMIT_PER_MINUTE' : 'RATE_LIMIT_TIERS',
        problem: `tier ${tier.name} under RATE_LIMIT_ALGORITHM=${algorithm}: ${(error as Error).message}`,
        fix: 'choose a figure or an algorithm that fits (docs/algorithms.md), or define the tier in LIMITS_FILE',
      });
    }
  }
  if (v.LIMITS_FILE === undefined) return { tiers, file: NO_SECTIONS };

  let text: string;
  try {
    text = readFile(limitsFilePath);
  } catch {
    problems.push({ knob: 'LIMITS_FILE', problem: `the file ${limitsFilePath} cannot be read`, fix: 'point LIMITS_FILE at a readable JSON file (docs/limits-file.md), or unset it' });
    return { tiers, file: NO_SECTIONS };
  }
  const parsed = parseLimitsFile(text, { algorithm });
  if (!parsed.ok) {
    problems.push(...parsed.problems);
    return { tiers, file: NO_SECTIONS };
  }
  for (const tier of parsed.tiers) {
    if (tier.name === 'default') {
      const set = DEFAULT_TIER_KNOBS.filter((knob) => env[knob] !== undefined && env[knob]?.trim() !== '');
      if (set.length > 0) {
        problems.push({
          knob: 'LIMITS_FILE',
          problem: `tiers.default is defined in the file and by ${set.join(', ')}`,
          fix: `keep one: remove tiers.default from LIMITS_FILE, or unset ${set.join(', ')}`,
        });
      }
      tiers = [tier, ...tiers.slice(1)];
    } else if (tiers.some((t) => t.name === tier.name)) {
      problems.push({
        knob: 'LIMITS_FILE',
        problem: `tiers.${tier.name} is defined in the file and in RATE_LIMIT_TIERS`,
        fix: `keep one: remove ${tier.name} from RATE_LIMIT_TIERS or from LIMITS_FILE`,
      });
    } else {
      tiers.push(tier);
    }
  }
  return { tiers, file: { costs: parsed.costs, rules: parsed.rules, upstreamTools: parsed.upstreamTools, upstreamCosts: parsed.upstreamCosts } };
}
