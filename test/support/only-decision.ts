import type { WindowDecision } from '../../src/library/window/decision';
import type { StoreDecision } from '../../src/library/limiter/limit-store';

/** The one decision of a one-policy set's StoreDecision, checked to agree with the set's verdict. */
export function only(result: StoreDecision): WindowDecision {
  expect(result.decisions).toHaveLength(1);
  const decision = result.decisions[0] as WindowDecision;
  expect(decision.allowed).toBe(result.allowed);
  return decision;
}
