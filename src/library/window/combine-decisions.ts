import { mostRestrictive } from './decide-set';
import { decisionHeadedBy, type Decision, type DecisionReason } from './decision';

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
  const shared = decisions.every((decision) => decision.shared);
  return decisionHeadedBy(top, refused === undefined, shared, refused?.reason ?? reasonOf(decisions), policies);
}

function reasonOf(decisions: readonly Decision[]): DecisionReason {
  return decisions.some((decision) => decision.reason === 'local_fallback') ? 'local_fallback' : 'within_limit';
}
