import { hasBurst } from '../window/algorithm';
import type { PolicyDecision } from '../window/decision';

/** What a policy publishes: units per window, and for the buckets the most at once. */
export interface PublishedLimit {
  readonly perWindow: number;
  readonly windowSeconds: number;
  /** The buckets only: the most calls at once (their `limit`). */
  readonly burst?: number;
}

/**
 * A decision's policy as integrators read it. A window's `limit` is its
 * quota; a bucket's `limit` is its burst (the most `remaining` can be), and
 * its quota is its rate, `perWindow`.
 */
export function publishedLimit(decision: PolicyDecision): PublishedLimit {
  const windowSeconds = Math.round(decision.windowMs / 1000);
  const perWindow = decision.perWindow ?? decision.limit;
  if (hasBurst(decision.algorithm)) return { perWindow, windowSeconds, burst: decision.limit };
  return { perWindow, windowSeconds };
}

/** "10 requests per 60 s"; a bucket's "bursts of 10, then 60 per 60 s". */
export function publishedLimitWords(limit: PublishedLimit): string {
  const rate = `${limit.perWindow} per ${limit.windowSeconds} s`;
  return limit.burst === undefined ? `${limit.perWindow} requests per ${limit.windowSeconds} s` : `bursts of ${limit.burst}, then ${rate}`;
}
