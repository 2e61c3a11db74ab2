import { z } from 'zod';
import { defineTool } from '../tool-registry';

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
  run(_args, { token, decision, limiter, policy, clock }) {
    const nowMs = clock();
    const resetInSeconds = Math.max(0, Math.ceil((decision.resetAtMs - nowMs) / 1000));
    const windowSeconds = Math.round(decision.windowMs / 1000);
    const structured = {
      tokenId: token.id,
      tier: policy.name,
      limit: decision.limit,
      remaining: decision.remaining,
      windowSeconds,
      resetAt: new Date(decision.resetAtMs).toISOString(),
      resetInSeconds,
      shared: decision.shared,
      reason: decision.reason,
      backend: limiter.backend,
    };
    const source = decision.shared
      ? `This figure is shared by every instance (${limiter.backend} backend).`
      : `This figure is NOT shared: this instance answered from its own window (${limiter.backend} backend, reason ${decision.reason}).`;
    const text =
      `Token ${token.id} (tier ${policy.name}): ${decision.remaining} of ${decision.limit} requests left ` +
      `in this ${windowSeconds} s window, this call included. The window resets at ${structured.resetAt} ` +
      `(in ${resetInSeconds} s). ${source}`;
    return { text, structured };
  },
});
