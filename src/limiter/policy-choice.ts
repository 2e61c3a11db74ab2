import { assertValidPolicy, assertValidPolicySet, stateSlotOf, type PolicySet, type RateLimitPolicy } from './policy';

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
const setIds = new WeakMap<PolicySet, string>();

/** The set a call is held to, validated (a RangeError naming the field), the same array each time for the same input. */
export function policySetOf(choice: PolicyChoice, fallback: PolicySet): PolicySet {
  return chosenSet(choice) ?? fallback;
}

/** The set the choice names, or undefined when it names none. */
function chosenSet(choice: PolicyChoice): PolicySet | undefined {
  if (choice.policy !== undefined && choice.policies !== undefined) throw new TypeError('pass policy or policies, not both');
  if (choice.policies !== undefined) {
    if (!validSets.has(choice.policies)) {
      assertValidPolicySet(choice.policies);
      validSets.add(choice.policies);
    }
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
  let id = setIds.get(policies);
  if (id === undefined) {
    id = policies.map(stateSlotOf).join(',');
    setIds.set(policies, id);
  }
  return id;
}

/** The set a configuration names; a TypeError when it names none. */
export function requiredPolicySet(choice: PolicyChoice, owner: string): PolicySet {
  const set = chosenSet(choice);
  if (set === undefined) throw new TypeError(`${owner}: policy or policies is required`);
  return set;
}
