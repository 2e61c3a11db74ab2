import { algorithmFor } from './decide-set';
import { algorithmOf, type RateLimitPolicy } from './policy';
import { hasBurst, type AlgorithmName } from './algorithm';

/** A policy as integrators read it: its figures and the algorithm's own promise in plain words. */
export interface PolicyDescription {
  readonly name: string;
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly windowSeconds: number;
  /** The buckets only: the most calls at once. */
  readonly burst?: number;
  /** The largest cost one call may have under this policy (a window's limit, a bucket's burst). */
  readonly maxCost: number;
  /** e.g. "bursts of up to 10, then one call every 0.5 s"; "at most 120 in any minute". */
  readonly words: string;
}

export function describePolicy(policy: RateLimitPolicy): PolicyDescription {
  const algorithm = algorithmOf(policy);
  const isBucket = hasBurst(algorithm);
  const implementation = algorithmFor(policy);
  return {
    name: policy.name,
    algorithm,
    limit: policy.limit,
    windowSeconds: policy.windowMs / 1000,
    ...(isBucket ? { burst: policy.burst ?? policy.limit } : {}),
    maxCost: implementation.maxCost(policy),
    words: implementation.describe(policy),
  };
}
