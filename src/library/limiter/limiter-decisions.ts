import { ALGORITHMS } from '../window/algorithms';
import { mostRestrictive, policyDecisions } from '../window/decide-set';
import { decisionHeadedBy, type Decision, type PolicyDecision } from '../window/decision';
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
