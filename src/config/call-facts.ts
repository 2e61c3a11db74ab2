import { describePolicy, type PolicyDescription } from '../library';
import { CHATTER_METHODS } from '../library/mcp';
import { FREE_TOOLS } from '../policies/free-calls';
import type { PolicyRule } from '../policies/policy-rule';
import type { Config } from './config';

/**
 * What calls cost and the rules on top of the tiers, from the configuration
 * the charge middleware uses: one description for /developers and the
 * firelimit://limits resource, so the two never disagree.
 */
export interface CallFacts {
  readonly freeMethods: readonly string[];
  readonly freeTools: readonly string[];
  readonly free: PolicyDescription;
  readonly costs: readonly (readonly [tool: string, cost: number])[];
  readonly rules: readonly RuleFact[];
}

export interface RuleFact {
  readonly name: string;
  readonly matches: string;
  readonly cost?: number;
  readonly limits: readonly PolicyDescription[];
  readonly shadow: boolean;
}

export function callFacts(config: Config): CallFacts {
  const { calls } = config.rateLimit;
  const configuredFree = [...calls.costs].filter(([, cost]) => cost === 0).map(([tool]) => tool);
  return {
    freeMethods: CHATTER_METHODS,
    freeTools: [...new Set([...FREE_TOOLS.filter((tool) => calls.costs.get(tool) === undefined || calls.costs.get(tool) === 0), ...configuredFree])],
    free: describePolicy(calls.free[0]),
    costs: [...calls.costs].filter(([, cost]) => cost > 0).sort(([a], [b]) => a.localeCompare(b)),
    rules: calls.rules.map(ruleFact),
  };
}

function ruleFact(rule: PolicyRule): RuleFact {
  const { method, tool, tier, tokenId } = rule.match;
  const parts = [tool !== undefined ? `calls of ${tool}` : method !== undefined ? method : 'every call', tier !== undefined ? `tier ${tier}` : '', tokenId !== undefined ? `token ${tokenId}` : '', rule.per === 'address' ? 'counted per client address, whoever signs in from it' : ''].filter(Boolean);
  return {
    name: rule.name,
    matches: parts.join(', '),
    ...(rule.cost !== undefined ? { cost: rule.cost } : {}),
    limits: (rule.limits ?? []).map(describePolicy),
    shadow: rule.shadow,
  };
}

