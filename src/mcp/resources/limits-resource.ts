import type { McpServer } from '@modelcontextprotocol/server';
import type { Config } from '../../config/config';
import { describePolicy } from '../../limiter/describe-policy';

export const LIMITS_RESOURCE_URI = 'firelimit://limits';

/** What the limits resource publishes: the same figures the limiter enforces and /developers shows. */
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
    headers: ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'RateLimit-Policy', 'RateLimit', 'Retry-After (on 429)'],
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
    {
      title: 'Configured rate limits',
      description: 'Every rate-limit tier this deployment enforces, per token, and the headers that report them.',
      mimeType: 'application/json',
    },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text }] }),
  );
}
