import { compiledSetOf } from './compiled-policy-set';
import { assertValidPolicy, assertValidPolicySet, type PolicySet, type RateLimitPolicy } from './policy';

/** Which policies a call is held to: one (`policy`), several (`policies`), or neither (the limiter's default). */
export interface PolicyChoice {
  /** One policy: shorthand for `policies: [policy]`. */
  readonly policy?: RateLimitPolicy;
  readonly policies?: PolicySet;
}

// Policies come from configuration and are the same objects call after call, so each is
// validated once and a single policy's set is built once, not on every request.
const validSets = new WeakSet<readonly RateLimitPolicy[]>();
const setOfPolicy = new WeakMap<RateLimitPolicy, PolicySet>();

/**
 * assertValidPolicySet, once per set object: a store used directly checks every
 * set it is given, and the set is the same array call after call.
 */
export function assertValidPolicySetOnce(policies: readonly RateLimitPolicy[]): asserts policies is PolicySet {
  if (validSets.has(policies)) return;
  assertValidPolicySet(policies);
  validSets.add(policies);
}

/** The set a call is held to, validated (a RangeError naming the field), the same array each time for the same input. */
export function policySetOf(choice: PolicyChoice, fallback: PolicySet): PolicySet {
  return chosenSet(choice) ?? fallback;
}

/** The set the choice names, or undefined when it names none. */
function chosenSet(choice: PolicyChoice): PolicySet | undefined {
  if (choice.policy !== undefined && choice.policies !== undefined) throw new TypeError('pass policy or policies, not both');
  if (choice.policies !== undefined) {
    assertValidPolicySetOnce(choice.policies);
    return choice.policies;
  }
  if (choice.policy !== undefined) {
    let set = setOfPolicy.get(choice.policy);
    if (set === undefined) {
      assertValidPolicy(choice.policy);
      set = [choice.policy];
      validSets.add(set);
      setOfPolicy.set(choice.policy, set);
    }
    return set;
  }
  return undefined;
}

/** What tells two sets' states apart: their slots, in order (see stateSlotOf). */
export function setIdOf(policies: PolicySet): string {
  return compiledSetOf(policies).id;
}

/** The set a configuration names; a TypeError when it names none. */
export function requiredPolicySet(choice: PolicyChoice, owner: string): PolicySet {
  const set = chosenSet(choice);
  if (set === undefined) throw new TypeError(`${owner}: policy or policies is required`);
  return set;
}
