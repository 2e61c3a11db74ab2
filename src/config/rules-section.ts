import { z } from 'zod';
import { type AlgorithmName, assertValidPolicySet, MAX_POLICIES_PER_SET } from '../library';
import type { PolicyRule } from '../policies/policy-rule';
import { MAX_CALL_COST, TOOL_NAME } from '../library/mcp';
import type { ConfigProblem } from './config-error';
import { limitSchema, NAME, policiesOf } from './limit-schema';

/**
 * The limits file's `costs` and `rules`:
 *
 *   "costs": { "whoami": 2 },
 *   "rules": [ { "name": "search-per-minute", "match": { "tool": "search" },
 *                "cost": 5, "limits": [{ "limit": 10, "window": "1m" }] } ]
 *
 * A rule matches on method, tool, tier and token (all given must match) and
 * gives a cost, extra limits (counted in calls per token and rule), or both;
 * `shadow: true` limits are decided and reported, never enforced.
 */

const cost = z
  .number({ error: 'expected a whole number of units' })
  .int({ error: 'expected a whole number of units' })
  .min(0, { error: 'expected 0 or more' })
  .max(MAX_CALL_COST, { error: `expected at most ${MAX_CALL_COST}` });

const toolName = z.string().regex(TOOL_NAME, { error: 'expected a tool name (1-128 of A-Z a-z 0-9 _ - .)' });

export const costsSchema = z.record(toolName, cost, { error: 'expected an object of costs by tool name' });

const matchSchema = z
  .object({
    method: z.string().regex(/^[A-Za-z0-9_/*-]{1,128}$/, { error: 'expected a JSON-RPC method such as "tools/call" or "notifications/*"' }).optional(),
    tool: toolName.optional(),
    tier: z.string().regex(NAME, { error: 'expected a tier name' }).optional(),
    token: z.string().regex(/^(?:tok|sub)_[A-Za-z0-9]{1,64}$/, { error: 'expected a token id (tok_...) or a signed-in caller id (sub_...), never a secret' }).optional(),
  })
  .strict();

const ruleSchema = z
  .object({
    name: z.string({ error: 'expected a rule name' }).regex(NAME, { error: 'expected 1-64 characters of A-Z a-z 0-9 _ -' }),
    match: matchSchema.default({}),
    cost: cost.optional(),
    limits: z.array(limitSchema, { error: 'expected a list of limits' }).min(1, { error: 'give at least one limit, or leave "limits" out' }).max(MAX_POLICIES_PER_SET, {
      error: `a rule holds at most ${MAX_POLICIES_PER_SET} limits`,
    }).optional(),
    shadow: z.boolean({ error: 'expected true or false' }).default(false),
    per: z.enum(['caller', 'address'], { error: 'expected "caller" (each token or signed-in user, the default) or "address" (each client address)' }).default('caller'),
  })
  .strict();

export const rulesSchema = z.array(ruleSchema, { error: 'expected a list of rules' });

export type ParsedRule = PolicyRule;

type RuleEntry = z.output<typeof ruleSchema>;

/** The rules as PolicyRules, pushing each problem the schema cannot see (duplicates, combinations). */
export function parsedRules(entries: readonly RuleEntry[], defaults: { readonly algorithm: AlgorithmName }, problems: ConfigProblem[]): PolicyRule[] {
  const names = new Set<string>();
  const rules: PolicyRule[] = [];
  entries.forEach((entry, i) => {
    const at = `rules[${i}]`;
    const problem = (text: string, fix: string): void => {
      problems.push({ knob: 'LIMITS_FILE', problem: `${at}: ${text}`, fix });
    };
    if (names.has(entry.name)) problem(`a second rule is named "${entry.name}"`, 'give every rule its own name (it names the rule\'s counters)');
    names.add(entry.name);
    if (entry.cost === undefined && entry.limits === undefined) problem('the rule gives neither "cost" nor "limits"', 'add a "cost", "limits", or both, or remove the rule');
    if (entry.shadow && entry.cost !== undefined) {
      problem('a shadow rule cannot set a cost (only limits can be tried without enforcing them)', 'remove "cost" from this rule, or "shadow"');
    }
    if (entry.match.tool !== undefined && entry.match.method !== undefined && entry.match.method !== 'tools/call') {
      problem(`match.tool names a tool but match.method is ${entry.match.method}; only tools/call calls tools`, 'remove match.method (a tool implies tools/call)');
    }
    if (entry.per === 'address' && entry.limits === undefined) {
      problem('"per": "address" counts the rule\'s limits per client address, and the rule gives none', 'add "limits", or remove "per"');
    }
    const { token, ...rest } = entry.match;
    const rule: PolicyRule = {
      name: entry.name,
      match: { ...rest, ...(token !== undefined ? { tokenId: token } : {}) },
      ...(entry.cost !== undefined ? { cost: entry.cost } : {}),
      shadow: entry.shadow,
      ...(entry.per === 'address' ? { per: 'address' as const } : {}),
    };
    if (entry.limits === undefined) {
      rules.push(rule);
      return;
    }
    const policies = policiesOf(entry.limits, entry.name, at, defaults, problems);
    try {
      assertValidPolicySet(policies);
      rules.push({ ...rule, limits: policies });
    } catch (error) {
      problem((error as Error).message, 'correct the rule\'s limits (docs/limits-file.md)');
    }
  });
  return rules;
}
