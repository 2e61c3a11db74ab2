import { ALGORITHMS, type AlgorithmName, type AnyAlgorithm } from './algorithms';
import { algorithmOf, stateSlotOf, type PolicySet } from './policy';

/**
 * What a decision needs of a policy set that depends on the set alone: each
 * policy's algorithm value, its name and its state slot, and the set's id.
 * Resolved once per set instead of on every call (the lookups showed in the
 * profile of `npm run bench -- algorithms`); sets are the same arrays call
 * after call (policy-choice.ts), so a set is compiled once. Like the slot
 * names the stores cached before, this assumes a policy is not mutated once
 * in use (its fields are readonly).
 */
export interface CompiledPolicySet {
  readonly policies: PolicySet;
  readonly size: number;
  readonly algorithms: readonly AnyAlgorithm[];
  readonly algorithmNames: readonly AlgorithmName[];
  /** stateSlotOf of each policy: a built string, so that property keys made from it are the same string each time. */
  readonly slots: readonly string[];
  /** What tells two sets' states apart: their slots, in order. */
  readonly id: string;
}

const compiled = new WeakMap<PolicySet, CompiledPolicySet>();
// A service decides on one or two sets nearly always: the last one answers without a WeakMap lookup.
let last: CompiledPolicySet | undefined;

export function compiledSetOf(policies: PolicySet): CompiledPolicySet {
  if (last !== undefined && last.policies === policies) return last;
  let set = compiled.get(policies);
  if (set === undefined) {
    set = compile(policies);
    compiled.set(policies, set);
  }
  last = set;
  return set;
}

function compile(policies: PolicySet): CompiledPolicySet {
  const algorithmNames = policies.map(algorithmOf);
  const slots = policies.map(stateSlotOf);
  return {
    policies,
    size: policies.length,
    algorithms: algorithmNames.map((name) => ALGORITHMS[name] as AnyAlgorithm),
    algorithmNames,
    slots,
    id: slots.join(','),
  };
}
