import { mostRestrictive } from './decide-set';
import type { Decision, DecisionReason } from './decision';

/**
 * Several decisions (one per key a request was charged on) as one: every
 * policy listed, the binding one on top, so one set of headers tells a client
 * what holds it. Refused if any is; shared only if all are.
 */
export function combineDecisions(decisions: readonly [Decision, ...Decision[]]): Decision {
  if (decisions.length === 1) return decisions[0];
  const policies = decisions.flatMap((decision) => decision.policies);
  const top = mostRestrictive(policies);
  const refused = decisions.find((decision) => !decision.allowed);
  return {
    allowed: refused === undefined,
    limit: top.limit,
    remaining: top.remaining,
    resetAtMs: top.resetAtMs,
    retryAfterMs: top.retryAfterMs,
    policyName: top.policyName,
    windowMs: top.windowMs,
    algorithm: top.algorithm,
    shared: decisions.every((decision) => decision.shared),
    reason: refused?.reason ?? reasonOf(decisions),
    policies,
  };
}

function reasonOf(decisions: readonly Decision[]): DecisionReason {
  return decisions.some((decision) => decision.reason === 'local_fallback') ? 'local_fallback' : 'within_limit';
}
