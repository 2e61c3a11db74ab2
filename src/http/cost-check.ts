import { algorithmFor, algorithmOf, hasBurst, type PolicySet, type RateLimitPolicy } from '../library';
import { JsonRpcCode, jsonRpcError, type JsonRpcErrorBody } from '../library/express';

export interface CostProblem {
  /**
   * 413 Content Too Large, not 429: no wait makes the call fit, so "retry
   * after" would be a lie; and not a bare 400: the request is well formed, it
   * is too large for this token, and 413 tells a client not to resend it as is.
   */
  readonly status: 413;
  readonly body: JsonRpcErrorBody;
}

/**
 * A call that costs more than one of its policies can ever hold (a window's
 * limit, a bucket's burst) can never be allowed, so it is refused before the
 * limiter, charged nothing, with the figures the client needs to split it.
 */
export function costProblem(cost: number, policies: PolicySet, id: JsonRpcErrorBody['id'] = null): CostProblem | undefined {
  let tightest: RateLimitPolicy | undefined;
  let most = Number.POSITIVE_INFINITY;
  for (const policy of policies) {
    const maxCost = algorithmFor(policy).maxCost(policy);
    if (maxCost < most) {
      most = maxCost;
      tightest = policy;
    }
  }
  if (tightest === undefined || cost <= most) return undefined;
  const windowSeconds = Math.round(tightest.windowMs / 1000);
  return {
    status: 413,
    body: jsonRpcError(
      id,
      JsonRpcCode.PayloadTooLarge,
      `This batch costs ${cost} units; ${isBucket(tightest) ? `your burst is ${most} at once` : `your limit is ${most} per ${windowSeconds} s`}, so it can never be allowed. Split it into batches of at most ${most} messages.`,
      { reason: 'cost_exceeds_limit', cost, limit: most, windowSeconds, policy: tightest.name },
    ),
  };
}

function isBucket(policy: RateLimitPolicy): boolean {
  const algorithm = algorithmOf(policy);
  return hasBurst(algorithm);
}
