import { ALGORITHMS, assertValidAdjustment, type Adjustment, type AlgorithmName, type AnyAlgorithm } from './algorithms';
import { compiledSetOf, type CompiledPolicySet } from './compiled-policy-set';
import type { PolicyDecision, WindowDecision } from './decision';
import { algorithmOf, type PolicySet, type RateLimitPolicy } from './policy';

/**
 * Several policies decided as one, pure: the step every store makes atomic
 * (one Map update, one RTDB transaction, one Lua script). A call is allowed
 * only if every policy allows it; a refused call changes no state at all, so
 * a tier's minute limit is not spent by calls its burst limit refused.
 */

export interface SetDecision {
  /** Per policy, in the set's order. In a refused set, a policy that would allow reports its budget unspent. */
  readonly decisions: readonly WindowDecision[];
  readonly allowed: boolean;
  /** Per policy, the state after the call (null: empty). */
  readonly states: readonly unknown[];
  /** True when `states` differ from the input and must be written. */
  readonly changed: boolean;
}

/** The policy's algorithm with its state opaque: stores hand back only what that algorithm produced. */
export function algorithmFor(policy: RateLimitPolicy): AnyAlgorithm {
  return ALGORITHMS[algorithmOf(policy)] as AnyAlgorithm;
}

export function decideSet(states: readonly unknown[], nowMs: number, policies: PolicySet, cost: number): SetDecision {
  const set = compiledSetOf(policies);
  if (set.size === 1) return decideOne(set, states[0] ?? null, nowMs, cost);
  const { algorithms } = set;
  const results = policies.map((policy, i) => (algorithms[i] as AnyAlgorithm).decide(states[i] ?? null, nowMs, policy, cost));
  const allowed = results.every((result) => result.decision.allowed);
  if (!allowed) {
    // Nothing is charged, so the policies that would have allowed report what they still hold.
    const decisions = results.map((result, i) => {
      if (!result.decision.allowed) return result.decision;
      return (algorithms[i] as AnyAlgorithm).decide(states[i] ?? null, nowMs, policies[i] as RateLimitPolicy, 0).decision;
    });
    // One state per policy, as on every other path, even when the caller's states array was short.
    const kept = states.length === policies.length ? states : policies.map((_policy, i) => states[i] ?? null);
    return { decisions, allowed, states: kept, changed: false };
  }
  const next = results.map((result, i) => result.next ?? states[i] ?? null);
  return { decisions: results.map((result) => result.decision), allowed, states: next, changed: results.some((result) => result.next !== null) };
}

/**
 * decideSet of a one-policy set (`set.size` 1) on its one state, without the
 * arrays of arrays: the common case, on every request's path. Stores that hold
 * the state itself call it directly and skip building a states array.
 */
export function decideOne(set: CompiledPolicySet, state: unknown, nowMs: number, cost: number): SetDecision {
  const { decision, next } = (set.algorithms[0] as AnyAlgorithm).decide(state, nowMs, set.policies[0], cost);
  return { decisions: [decision], allowed: decision.allowed, states: [next ?? state], changed: next !== null };
}

/**
 * Corrections to several policies' states at once (a refund, a write-back of
 * calls granted during an outage). Unlike a decision it is per policy: each
 * state takes its own adjustment (null: untouched). Null when nothing changes.
 */
export function adjustSet(
  states: readonly unknown[],
  nowMs: number,
  policies: PolicySet,
  adjustments: readonly (Adjustment<unknown> | null)[],
): unknown[] | null {
  let changed = false;
  const next = policies.map((policy, i) => {
    const state = states[i] ?? null;
    const adjustment = adjustments[i] ?? null;
    if (adjustment === null) return state;
    const adjusted = algorithmFor(policy).adjust(state, nowMs, policy, adjustment);
    if (adjusted === null) return state;
    changed = true;
    return adjusted;
  });
  return changed ? next : null;
}

/**
 * Checks adjustments from outside the pure core (null: none), so a bad one
 * never reaches a store: an integer delta, and a floor (`atLeast`) that is a
 * state of the policy's own algorithm, as its parseState reads it.
 */
export function assertValidAdjustments(policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): void {
  policies.forEach((policy, i) => {
    const adjustment = adjustments[i] ?? null;
    assertValidAdjustment(adjustment);
    if (adjustment?.atLeast != null && algorithmFor(policy).parseState(adjustment.atLeast) === null) {
      throw new RangeError(`adjustment atLeast for policy "${policy.name}" is not a ${algorithmOf(policy)} state: ${JSON.stringify(adjustment.atLeast)}`);
    }
  });
}

/** Epoch ms after which every state of the set is empty again (for TTLs, `e` and sweeps); null when all are empty. */
export function setExpiresAtMs(states: readonly unknown[], policies: PolicySet): number | null {
  return compiledExpiresAtMs(states, compiledSetOf(policies));
}

/** setExpiresAtMs of a set already compiled. */
export function compiledExpiresAtMs(states: readonly unknown[], set: CompiledPolicySet): number | null {
  const { algorithms, policies } = set;
  let latest: number | null = null;
  // A loop, not forEach: this runs on every write of every store, and a callback that assigns
  // `latest` costs a closure and a context per call.
  for (let i = 0; i < set.size; i++) {
    const state = states[i] ?? null;
    if (state === null) continue;
    const expiresAtMs = (algorithms[i] as AnyAlgorithm).expiresAtMs(state, policies[i] as RateLimitPolicy);
    if (latest === null || expiresAtMs > latest) latest = expiresAtMs;
  }
  return latest;
}

/** Each decision named by its policy. */
export function policyDecisions(decisions: readonly WindowDecision[], policies: PolicySet): PolicyDecision[] {
  const { algorithmNames } = compiledSetOf(policies);
  // A loop, not map(): no closure on every decision.
  const named: PolicyDecision[] = [];
  for (let i = 0; i < policies.length; i++) named.push(policyDecision(decisions[i] as WindowDecision, policies[i] as RateLimitPolicy, algorithmNames[i] as AlgorithmName));
  return named;
}

function policyDecision(d: WindowDecision, policy: RateLimitPolicy, algorithm: AlgorithmName): PolicyDecision {
  return {
    allowed: d.allowed,
    limit: d.limit,
    remaining: d.remaining,
    resetAtMs: d.resetAtMs,
    retryAfterMs: d.retryAfterMs,
    policyName: policy.name,
    windowMs: policy.windowMs,
    perWindow: policy.limit,
    algorithm,
  };
}

/**
 * The policy that binds: when refused, the refusing one that frees last (its
 * retryAfterMs is when the call passes all of them); when allowed, the one
 * with least left, the longer window on a tie.
 */
export function mostRestrictive(decisions: readonly PolicyDecision[]): PolicyDecision {
  let chosen = decisions[0] as PolicyDecision;
  for (let i = 1; i < decisions.length; i++) {
    const d = decisions[i] as PolicyDecision;
    if (binds(d, chosen)) chosen = d;
  }
  return chosen;
}

function binds(a: PolicyDecision, b: PolicyDecision): boolean {
  if (a.allowed !== b.allowed) return !a.allowed;
  if (!a.allowed) return a.retryAfterMs > b.retryAfterMs;
  if (a.remaining !== b.remaining) return a.remaining < b.remaining;
  return a.windowMs > b.windowMs;
}
