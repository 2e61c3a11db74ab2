import { z } from 'zod';
import { describePolicy } from '../../limiter/describe-policy';
import { defineTool } from '../tool-registry';

const policySchema = z.object({
  name: z.string().describe('The policy, as named in the RateLimit-Policy header.'),
  algorithm: z.string().describe('fixed-window, sliding-window, sliding-log, token-bucket or leaky-bucket.'),
  limit: z.number().int().describe('Calls per window (windows) or refilled per window (buckets).'),
  windowSeconds: z.number().describe('The window the limit is counted over.'),
  burst: z.number().int().optional().describe('Buckets only: the most calls at once.'),
  promise: z.string().describe('What the policy promises, in plain words.'),
  remaining: z.number().int().describe('Calls left under this policy after this call.'),
  resetAt: z.string().describe('ISO 8601 time at which this policy is whole again.'),
});

const outputSchema = {
  tokenId: z.string().describe('The public id of the calling token (the rate-limit key).'),
  tier: z.string().describe('The rate-limit tier (policy) this token is counted under.'),
  limit: z.number().int().describe('Requests allowed per window.'),
  remaining: z.number().int().describe('Requests left in the current window, after this call.'),
  windowSeconds: z.number().int().describe('Length of the fixed window.'),
  resetAt: z.string().describe('ISO 8601 time at which the window ends and the budget refills.'),
  resetInSeconds: z.number().int().describe('Seconds from now until resetAt.'),
  shared: z.boolean().describe('True when the figure is the one every instance enforces; false when this instance answered from its own window.'),
  reason: z.string().describe('Why the figure came out this way: within_limit, local_fallback, ...'),
  backend: z.string().describe('The limiter backend: memory, rtdb or redis.'),
  policies: z.array(policySchema).describe('Every policy this token is held to; the top-level figures are the most restrictive one. A call must fit all of them.'),
};

/**
 * The caller's own limit as of this call. It reads the decision the limiter
 * already made for this request (this call is counted once, not twice), so
 * `remaining` is what the next request starts from.
 */
export const rateLimitStatusTool = defineTool<Record<string, never>, typeof outputSchema>({
  name: 'rate_limit_status',
  title: 'Rate limit status',
  description:
    "Your token's rate limit right now: limit, requests remaining in this window (this call included), when the window resets, and whether the figure is shared by every instance.",
  outputSchema,
  annotations: { readOnlyHint: true, idempotentHint: false, openWorldHint: false },
  run(_args, { token, decision, limiter, tier, clock }) {
    const nowMs = clock();
    const resetInSeconds = Math.max(0, Math.ceil((decision.resetAtMs - nowMs) / 1000));
    const windowSeconds = Math.round(decision.windowMs / 1000);
    const structured = {
      tokenId: token.id,
      tier: tier.name,
      limit: decision.limit,
      remaining: decision.remaining,
      windowSeconds,
      resetAt: new Date(decision.resetAtMs).toISOString(),
      resetInSeconds,
      shared: decision.shared,
      reason: decision.reason,
      backend: limiter.backend,
      policies: tier.policies.map((policy, i) => {
        const described = describePolicy(policy);
        const outcome = decision.policies[i];
        return {
          name: described.name,
          algorithm: described.algorithm,
          limit: described.limit,
          windowSeconds: described.windowSeconds,
          ...(described.burst !== undefined ? { burst: described.burst } : {}),
          promise: described.words,
          remaining: outcome?.remaining ?? 0,
          resetAt: new Date(outcome?.resetAtMs ?? decision.resetAtMs).toISOString(),
        };
      }),
    };
    const source = decision.shared
      ? `This figure is shared by every instance (${limiter.backend} backend).`
      : `This figure is NOT shared: this instance answered from its own window (${limiter.backend} backend, reason ${decision.reason}).`;
    const text =
      `Token ${token.id} (tier ${tier.name}): ${decision.remaining} of ${decision.limit} requests left ` +
      `in this ${windowSeconds} s window, this call included. The window resets at ${structured.resetAt} ` +
      `(in ${resetInSeconds} s). ${source}` +
      (tier.policies.length > 1 || structured.policies[0]?.algorithm !== 'fixed-window'
        ? ` Policies: ${structured.policies.map((p) => `${p.name}: ${p.promise} (${p.remaining} left)`).join('; ')}.`
        : '');
    return { text, structured };
  },
});
