import type { McpServer } from '@modelcontextprotocol/server';
import { callFacts } from '../../config/call-facts';
import { upstreamIntervalMs, type Config, type UpstreamQuotaConfig } from '../../config/config';
import { FORWARDED_METHODS, NO_UPSTREAM_COSTS, sharedUpstreamCostOf } from '../../config/upstream-costs';
import { reservationsPerTokenOf } from '../../config/upstream-config';
import { describePolicy } from '../../library';

export const LIMITS_RESOURCE_URI = 'firelimit://limits';

/** How the resource is listed, by the server's own registry and by the gateway's list alike. */
export const LIMITS_RESOURCE_METADATA = {
  title: 'Configured rate limits',
  description: 'Every rate-limit tier this deployment enforces per token, what each call costs, the rules on top, the upstream quotas, and the headers that report them.',
  mimeType: 'application/json',
} as const;

/** What the limits resource publishes: the same figures the limiter enforces and /developers shows (tiers, costs and rules, upstream quotas). */
export function describeLimits(config: Config): Record<string, unknown> {
  return {
    backend: config.rateLimit.backend,
    defaultTier: config.rateLimit.defaultTier.name,
    tiers: config.rateLimit.tiers.map((tier) => ({
      name: tier.name,
      // The first policy's figures, as before several limits per tier; `policies` has them all.
      limit: tier.policies[0].limit,
      windowSeconds: Math.round(tier.policies[0].windowMs / 1000),
      policies: tier.policies.map(describePolicy),
    })),
    calls: callFacts(config),
    ...(config.upstream === undefined ? {} : { upstreamQuotas: upstreamQuotasOf(config) }),
    headers: ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'RateLimit-Policy', 'RateLimit', 'Retry-After (on 429)'],
  };
}

/** The quotas in front of forwarded calls, every token's together: the shared one and each tool's own. */
function upstreamQuotasOf(config: Config): Record<string, unknown> {
  const upstream = config.upstream;
  const quota = (q: UpstreamQuotaConfig) => ({
    limit: q.limit,
    windowSeconds: q.windowMs / 1000,
    headroom: q.headroom,
    intervalMs: upstreamIntervalMs(q),
    maxWaitMs: q.maxWaitMs,
    ...(q.dailyBudget === undefined ? {} : { dailyBudget: q.dailyBudget }),
    // A token's share of the waiting slots, across every tool (docs/adr/0053).
    maxReservationsPerToken: reservationsPerTokenOf(q),
  });
  const costs = upstream?.costs ?? NO_UPSTREAM_COSTS;
  return {
    ...(upstream?.quota === undefined
      ? {}
      : {
          shared: {
            ...quota(upstream.quota),
            // Which requests the shared quota counts: every forwarded one, each message of a batch on its own; lists come from a cache.
            counts: FORWARDED_METHODS.filter((method) => sharedUpstreamCostOf(costs, method) > 0),
            ...(costs.tools.size === 0 ? {} : { toolCosts: Object.fromEntries(costs.tools) }),
          },
        }),
    tools: Object.fromEntries([...(upstream?.toolQuotas ?? [])].map(([tool, q]) => [tool, quota(q)])),
  };
}

/**
 * Reading a resource is an MCP request like any other: it is counted once, by
 * the middleware, before it gets here. The text is rendered once: the
 * configuration it describes does not change while the process runs.
 */
export function registerLimitsResource(server: McpServer, config: Config): void {
  const text = JSON.stringify(describeLimits(config), null, 2);
  server.registerResource(
    'limits',
    LIMITS_RESOURCE_URI,
    LIMITS_RESOURCE_METADATA,
    (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text }] }),
  );
}
