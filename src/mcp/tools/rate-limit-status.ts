import { z } from 'zod';
import { describePolicy } from '../../library';
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
  scope: z.string().optional().describe('tier (your tier or an override of it, counted in units), free (free calls: handshakes, pings, this tool), rule or tool (extra limits on some calls, counted in calls).'),
  source: z.string().optional().describe('What set this limit: tier, fallback (your tier is not configured), override (set at runtime), rule, free.'),
  appliesTo: z.string().optional().describe('For rule and tool scopes: which calls it holds (the rule name, the tool).'),
  shadow: z.boolean().optional().describe('True: decided and reported, never enforced.'),
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
  backend: z.string().describe('The limiter backend: memory, rtdb, redis or sqlite.'),
  policies: z.array(policySchema).describe('Every policy this token is held to; the top-level figures are the most restrictive one. A call must fit all of them.'),
};

/**
 * The caller's own limits as of this call: every scope that holds it, each
 * with what is left (the charged decision where this request spent, a cost-0
 * read elsewhere), so `remaining` is what the next request starts from.
 */
export const rateLimitStatusTool = defineTool<Record<string, never>, typeof outputSchema>({
  name: 'rate_limit_status',
  title: 'Rate limit status',
  description:
    "Your token's rate limits right now: every limit that holds you (your tier, free calls, per-tool rules, overrides) with what is left in each, when they reset, and whether the figures are shared by every instance. This call is free.",
  outputSchema,
  annotations: { readOnlyHint: true, idempotentHint: false, openWorldHint: false },
  async run(_args, { token, decision: charged, limiter, tier, clock, budgets }) {
    const nowMs = clock();
    const scopes = budgets === undefined ? undefined : await budgets();
    // The top-level figures are the tier's (or its override's): the budget integrators plan with.
    const decision = scopes?.find((b) => b.scope.scope === 'tier' && !b.scope.shadow)?.decision ?? charged;
    const resetInSeconds = Math.max(0, Math.ceil((decision.resetAtMs - nowMs) / 1000));
    const windowSeconds = Math.round(decision.windowMs / 1000);
    const listed = scopes ?? [{ scope: undefined, decision: { ...charged, policies: charged.policies.slice(0, tier.policies.length) } }];
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
      policies: listed.flatMap(({ scope, decision: held }) =>
        (scope?.policies ?? tier.policies).map((policy, i) => {
          const described = describePolicy(policy);
          const outcome = held.policies[i];
          return {
            name: described.name,
            algorithm: described.algorithm,
            limit: described.limit,
            windowSeconds: described.windowSeconds,
            ...(described.burst !== undefined ? { burst: described.burst } : {}),
            promise: described.words,
            remaining: outcome?.remaining ?? 0,
            resetAt: new Date(outcome?.resetAtMs ?? held.resetAtMs).toISOString(),
            ...(scope === undefined
              ? {}
              : {
                  scope: scope.scope,
                  source: scope.source,
                  ...(scope.rule !== undefined || scope.tool !== undefined ? { appliesTo: [scope.rule, scope.tool].filter((x) => x !== undefined).join(' / ') } : {}),
                  ...(scope.shadow ? { shadow: true } : {}),
                }),
          };
        }),
      ),
    };
    const source = decision.shared
      ? `This figure is shared by every instance (${limiter.backend} backend).`
      : `This figure is NOT shared: this instance answered from its own window (${limiter.backend} backend, reason ${decision.reason}).`;
    const text =
      `Token ${token.id} (tier ${tier.name}): ${decision.remaining} of ${decision.limit} requests left ` +
      `in this ${windowSeconds} s window, counted after this call (free unless your operator prices it). The window resets at ${structured.resetAt} ` +
      `(in ${resetInSeconds} s). ${source}` +
      (structured.policies.length > 1 || structured.policies[0]?.algorithm !== 'fixed-window'
        ? ` Policies: ${structured.policies.map((p) => `${p.name}${p.scope === undefined || p.scope === 'tier' ? '' : ` (${p.scope}${p.appliesTo === undefined ? '' : `: ${p.appliesTo}`}${p.shadow === true ? ', shadow' : ''})`}: ${p.promise} (${p.remaining} left)`).join('; ')}.`
        : '');
    return { text, structured };
  },
});
