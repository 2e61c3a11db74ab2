import { assertValidLimitParams, type AlgorithmName, type LimitParams } from './algorithm';
import { isAlgorithmName } from './algorithms';

/**
 * A published limit: what the IETF RateLimit-Policy header calls a policy.
 * `algorithm` (default fixed-window) decides how `limit` units per `windowMs`
 * are counted; `burst` is the buckets' most units at once (default `limit`).
 */
export interface RateLimitPolicy extends LimitParams {
  readonly name: string;
  readonly algorithm?: AlgorithmName;
}

/**
 * Every limit one call is held to (a tier's burst, minute and day figures),
 * charged all or nothing: a call passes only if each allows it.
 */
export type PolicySet = readonly [RateLimitPolicy, ...RateLimitPolicy[]];

/** A tier's limits at most; each is one more state in every transaction and script. */
export const MAX_POLICIES_PER_SET = 8;

/**
 * The sliding log keeps one entry per admitted unit (at most `limit`), and
 * every decision rewrites it: past this the node or value gets too big for one
 * round trip. The sliding window promises nearly the same at two integers.
 */
export const MAX_SLIDING_LOG_LIMIT = 1000;

export function algorithmOf(policy: RateLimitPolicy): AlgorithmName {
  return policy.algorithm ?? 'fixed-window';
}

/**
 * Where a policy's state lives beside the others of its key: the algorithm and
 * the window length, which give a stored state its meaning. Not the name, nor
 * the limit or burst: a token whose tier changes mid-window keeps what it has
 * spent under the new figure instead of starting afresh. Safe as an RTDB key
 * and a Redis key suffix.
 */
export function stateSlotOf(policy: RateLimitPolicy): string {
  return `${algorithmOf(policy)}:${policy.windowMs}`;
}

/** Throws a RangeError naming the bad field; policies come from config and must never be "fixed up". */
export function assertValidPolicy(policy: RateLimitPolicy): void {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(policy.name)) {
    throw new RangeError(`policy name must be 1-64 characters of [A-Za-z0-9_-], got ${JSON.stringify(policy.name)}`);
  }
  if (!Number.isSafeInteger(policy.limit) || policy.limit < 1) {
    throw new RangeError(`policy "${policy.name}": limit must be a positive integer, got ${policy.limit}`);
  }
  if (!Number.isSafeInteger(policy.windowMs) || policy.windowMs < 1000) {
    throw new RangeError(`policy "${policy.name}": windowMs must be an integer >= 1000, got ${policy.windowMs}`);
  }
  const algorithm = algorithmOf(policy);
  if (!isAlgorithmName(algorithm)) {
    throw new RangeError(`policy "${policy.name}": unknown algorithm ${JSON.stringify(algorithm)}`);
  }
  if (policy.burst !== undefined && (!Number.isSafeInteger(policy.burst) || policy.burst < 1)) {
    throw new RangeError(`policy "${policy.name}": burst must be a positive integer, got ${policy.burst}`);
  }
  // The fixed window only adds counts; the others scale units by windowMs and must stay exact.
  if (algorithm !== 'fixed-window') {
    try {
      assertValidLimitParams(policy);
    } catch (error) {
      throw new RangeError(`policy "${policy.name}": ${(error as Error).message}`);
    }
  }
  if (algorithm === 'sliding-log' && policy.limit > MAX_SLIDING_LOG_LIMIT) {
    throw new RangeError(
      `policy "${policy.name}": a sliding-log keeps one entry per call, so its limit must be at most ${MAX_SLIDING_LOG_LIMIT}, got ${policy.limit}; use sliding-window for larger limits`,
    );
  }
}

/** Every policy valid, at most MAX_POLICIES_PER_SET, no two sharing a name or a state slot. */
export function assertValidPolicySet(policies: readonly RateLimitPolicy[]): asserts policies is PolicySet {
  if (policies.length === 0) throw new RangeError('a policy set needs at least one policy');
  if (policies.length > MAX_POLICIES_PER_SET) {
    throw new RangeError(`a policy set holds at most ${MAX_POLICIES_PER_SET} policies, got ${policies.length}`);
  }
  const names = new Set<string>();
  const slots = new Map<string, string>();
  for (const policy of policies) {
    assertValidPolicy(policy);
    if (names.has(policy.name)) throw new RangeError(`two policies in one set are both named "${policy.name}"`);
    names.add(policy.name);
    const slot = stateSlotOf(policy);
    const other = slots.get(slot);
    if (other !== undefined) {
      throw new RangeError(
        `policies "${other}" and "${policy.name}" are both ${algorithmOf(policy)} over ${policy.windowMs} ms; only the lower limit would ever matter, so keep one`,
      );
    }
    slots.set(slot, policy.name);
  }
}

export function assertValidCost(cost: number): void {
  if (!Number.isSafeInteger(cost) || cost < 0) {
    throw new RangeError(`cost must be a non-negative integer, got ${cost}`);
  }
}

/** The longest window of the set: how long its states can matter. */
export function longestWindowMs(policies: PolicySet): number {
  let longest = 0;
  for (const policy of policies) if (policy.windowMs > longest) longest = policy.windowMs;
  return longest;
}
