import { z } from 'zod';
import { TOOL_NAME } from '../library/mcp';
import type { ConfigProblem } from './config-error';
import { parseDuration } from './limit-schema';
import { upstreamCostsSchema } from './upstream-costs';
import { hasAtMostFourDecimals, parseUpstreamRate, UPSTREAM_RATE_EXPECTED, type UpstreamRate } from './upstream-rate';

/**
 * The limits file's `upstream` section: quotas of the upstream's own tools,
 * each on its own key beside the shared UPSTREAM_RATE (both hold).
 *
 *   "upstream": { "tools": {
 *     "search": { "rate": "15/min", "headroom": 0.8, "maxWait": "30s", "dailyBudget": 1000 } } }
 *
 * `headroom` and `maxWait` default to UPSTREAM_HEADROOM and
 * UPSTREAM_MAX_WAIT_MS; a tool quota has no daily budget unless it gives
 * one. UPSTREAM_GRACE_MS and UPSTREAM_HOLD_MS apply to every quota.
 */

/** The shared quota's name in answers and metrics; a tool's own quota is named by its tool, so no tool quota may take this one. */
export const SHARED_QUOTA_NAME = 'upstream';

const toolQuotaSchema = z
  .object({
    rate: z.string({ error: UPSTREAM_RATE_EXPECTED }).refine((s) => parseUpstreamRate(s) !== undefined, { error: UPSTREAM_RATE_EXPECTED }),
    headroom: z.number({ error: 'expected a fraction above 0 and at most 1, e.g. 0.9' }).gt(0, { error: 'expected a fraction above 0 and at most 1' }).max(1, { error: 'expected a fraction above 0 and at most 1' })
      .refine(hasAtMostFourDecimals, { error: 'expected at most 4 decimals' }).optional(),
    maxWait: z.string({ error: 'expected a duration such as "30s" or "1m"' }).refine((s) => parseDuration(s) !== undefined, {
      error: 'expected a duration such as "30s" or "1m" (a whole number and one unit)',
    }).optional(),
    dailyBudget: z.number({ error: 'expected a whole number of calls' }).int({ error: 'expected a whole number of calls' }).min(1, { error: 'expected at least 1' }).max(1_000_000_000, { error: 'expected at most 1000000000' }).optional(),
  })
  .strict();

export const upstreamSectionSchema = z
  .object({
    tools: z.record(z.string(), toolQuotaSchema, { error: 'expected an object of quotas by tool name' }).default({}),
    /** What a forwarded request costs on the shared quota (upstream-costs.ts). */
    costs: upstreamCostsSchema.optional(),
  })
  .strict();

/** One tool's quota as the file gives it; what it leaves out comes from the knobs. */
export interface UpstreamToolQuotaEntry extends UpstreamRate {
  readonly headroom?: number;
  readonly maxWaitMs?: number;
  readonly dailyBudget?: number;
}

/** The quotas by tool, pushing a problem for each name that cannot be a tool's. */
export function upstreamToolQuotasOf(section: z.output<typeof upstreamSectionSchema> | undefined, problems: ConfigProblem[]): ReadonlyMap<string, UpstreamToolQuotaEntry> {
  const quotas = new Map<string, UpstreamToolQuotaEntry>();
  for (const [tool, entry] of Object.entries(section?.tools ?? {})) {
    // Checked here, not by the schema: zod reports a bad record key with the record's own message.
    if (tool === SHARED_QUOTA_NAME) {
      problems.push({ knob: 'LIMITS_FILE', problem: `upstream.tools.${tool}: "${tool}" is the name answers and metrics give the shared quota (UPSTREAM_RATE), so a tool's own quota cannot take it`, fix: 'set the shared quota with UPSTREAM_RATE, or remove this entry' });
      continue;
    }
    if (!TOOL_NAME.test(tool)) {
      problems.push({ knob: 'LIMITS_FILE', problem: `upstream.tools.${tool}: expected a tool name (1-128 of A-Z a-z 0-9 _ - .)`, fix: 'name the tool exactly as the upstream lists it' });
      continue;
    }
    quotas.set(tool, {
      ...(parseUpstreamRate(entry.rate) as UpstreamRate),
      ...(entry.headroom !== undefined ? { headroom: entry.headroom } : {}),
      ...(entry.maxWait !== undefined ? { maxWaitMs: parseDuration(entry.maxWait) as number } : {}),
      ...(entry.dailyBudget !== undefined ? { dailyBudget: entry.dailyBudget } : {}),
    });
  }
  return quotas;
}
