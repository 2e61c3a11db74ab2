import { ALGORITHMS, type AlgorithmName } from '../window/algorithms';
import type { CompiledPolicySet } from '../window/compiled-policy-set';
import { mostRestrictive, policyDecisions } from '../window/decide-set';
import { decisionHeadedBy, type Decision, type PolicyDecision, type WindowDecision } from '../window/decision';
import type { StoreDecision } from './limit-store';
import { algorithmOf, type PolicySet } from '../window/policy';

/** A store's answer as the limiter's Decision: the binding policy's figures on top, every policy below. */
export function toDecision(
  result: Pick<StoreDecision, 'allowed' | 'decisions'>,
  policies: PolicySet,
  shared: boolean,
  reason: Decision['reason'] = result.allowed ? 'within_limit' : 'limit',
): Decision {
  const named = policyDecisions(result.decisions, policies);
  const top = named.length === 1 ? (named[0] as PolicyDecision) : mostRestrictive(named);
  return decisionHeadedBy(top, result.allowed, shared, reason, named);
}

/**
 * toDecision of a one-policy set's only decision, built in two objects and an
 * array (the fewest a Decision can be): the memory limiter's path, where these
 * allocations were most of a decision's cost.
 */
export function decisionOfOne(d: WindowDecision, set: CompiledPolicySet, shared: boolean): Decision {
  const policy = set.policies[0];
  const { allowed, limit, remaining, resetAtMs, retryAfterMs } = d;
  const { name: policyName, windowMs, limit: perWindow } = policy;
  const algorithm = set.algorithmNames[0] as AlgorithmName;
  const named: PolicyDecision = { allowed, limit, remaining, resetAtMs, retryAfterMs, policyName, windowMs, perWindow, algorithm };
  const reason = allowed ? 'within_limit' : 'limit';
  return { allowed, limit, remaining, resetAtMs, retryAfterMs, policyName, windowMs, perWindow, algorithm, shared, reason, policies: [named] };
}

/**
 * A fallback decision whose local state was charged `weight` units per unit
 * of cost (outage-share.ts), in the caller's units: what is left is left for
 * calls of `weight` units each, so the headers do not promise more calls than
 * the instance will admit.
 */
export function inCallerUnits(decision: Decision, weight: number): Decision {
  if (weight === 1) return decision;
  const policies = decision.policies.map((d) => ({ ...d, remaining: Math.floor(d.remaining / weight) }));
  return { ...decision, remaining: Math.floor(decision.remaining / weight), policies };
}

/** Fail-closed: refused by every policy until the backend is worth asking again. Not a rate-limit hit. */
export function unavailable(policies: PolicySet, nowMs: number, retryAfterMs: number): Decision {
  const decisions = policies.map((policy) => ({
    allowed: false,
    limit: ALGORITHMS[algorithmOf(policy)].maxCost(policy),
    remaining: 0,
    resetAtMs: nowMs + retryAfterMs,
    retryAfterMs,
  }));
  return toDecision({ allowed: false, decisions }, policies, false, 'backend_unavailable');
}
