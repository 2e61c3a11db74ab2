import { z } from 'zod';
import { TOOL_NAME } from '../library/mcp';
import type { ConfigProblem } from './config-error';

/**
 * What a forwarded request costs on the shared upstream quota (UPSTREAM_RATE):
 * every request firelimit forwards counts 1, each message of a batch on its
 * own; the lists, served from firelimit's cache, count nothing. The limits
 * file's `upstream.costs` may set a method or a tool to 0 where the operator
 * knows the upstream does not count it:
 *
 *   "upstream": { "costs": { "methods": { "resources/read": 0 }, "tools": { "echo": 0 } } }
 *
 * A tool's entry wins over `methods["tools/call"]`. A tool's own quota
 * (`upstream.tools`) counts every call to it whatever its cost here.
 */

/** The requests firelimit forwards to the upstream, each on the shared quota. */
export const FORWARDED_METHODS = ['tools/call', 'resources/read', 'prompts/get', 'completion/complete'] as const;
export type ForwardedMethod = (typeof FORWARDED_METHODS)[number];

/** 0 or 1: a weighted cost (one call counting as several slots) would need a cursor that moves by k intervals, which is not built. */
export type UpstreamCost = 0 | 1;

export interface UpstreamCosts {
  readonly methods: ReadonlyMap<ForwardedMethod, UpstreamCost>;
  readonly tools: ReadonlyMap<string, UpstreamCost>;
}

export const NO_UPSTREAM_COSTS: UpstreamCosts = { methods: new Map(), tools: new Map() };

const COST_EXPECTED = 'expected 0 (the upstream does not count it) or 1 (the default); weighted upstream costs are not built';
const costSchema = z.union([z.literal(0), z.literal(1)], { error: COST_EXPECTED });

export const upstreamCostsSchema = z
  .object({
    methods: z.record(z.string(), costSchema, { error: 'expected an object of costs by method, e.g. { "resources/read": 0 }' }).default({}),
    tools: z.record(z.string(), costSchema, { error: 'expected an object of costs by tool name, e.g. { "echo": 0 }' }).default({}),
  })
  .strict();

/** The costs as maps, pushing a problem for each method or name that cannot be one (checked here: zod words a bad record key with the record's message). */
export function upstreamCostsOf(section: z.output<typeof upstreamCostsSchema> | undefined, problems: ConfigProblem[]): UpstreamCosts {
  const methods = new Map<ForwardedMethod, UpstreamCost>();
  const tools = new Map<string, UpstreamCost>();
  for (const [method, cost] of Object.entries(section?.methods ?? {})) {
    if (!(FORWARDED_METHODS as readonly string[]).includes(method)) {
      problems.push({ knob: 'LIMITS_FILE', problem: `upstream.costs.methods.${method}: not a request firelimit forwards upstream`, fix: `name one of ${FORWARDED_METHODS.join(', ')} (lists are served from firelimit's cache and cost nothing)` });
      continue;
    }
    methods.set(method as ForwardedMethod, cost);
  }
  for (const [tool, cost] of Object.entries(section?.tools ?? {})) {
    if (!TOOL_NAME.test(tool)) {
      problems.push({ knob: 'LIMITS_FILE', problem: `upstream.costs.tools.${tool}: expected a tool name (1-128 of A-Z a-z 0-9 _ - .)`, fix: 'name the tool exactly as the upstream lists it' });
      continue;
    }
    tools.set(tool, cost);
  }
  return { methods, tools };
}

/** What one forwarded request costs on the shared quota: the tool's entry, else the method's, else 1. */
export function sharedUpstreamCostOf(costs: UpstreamCosts, method: ForwardedMethod, tool?: string): UpstreamCost {
  if (method === 'tools/call' && tool !== undefined) {
    const own = costs.tools.get(tool);
    if (own !== undefined) return own;
  }
  return costs.methods.get(method) ?? 1;
}
