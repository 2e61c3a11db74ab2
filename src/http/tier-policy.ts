import { findTier, type Config } from '../config/config';
import type { Tier } from '../config/tier';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken } from '../tokens/token-record';

/**
 * The tier a token is counted under, from the configuration. A
 * token naming a tier the configuration does not have (a tier retired from
 * RATE_LIMIT_TIERS, a typo in the store) is counted under the default tier,
 * the lowest published limit, and a warning is logged once per unknown tier
 * name. Refusing such tokens would lock paying integrators out over an
 * operator's config change; the default tier can never grant more than
 * anyone is promised. See docs/adr/0004-mcp-host-validation.md.
 */
export function createTierResolver(config: Config, logger: Logger): (token: AuthenticatedToken) => Tier {
  const warned = new Set<string>();
  return (token) => {
    const tier = findTier(config, token.tier);
    if (tier !== undefined) return tier;
    // Tier names come from token records, a bounded set; the Set stays small.
    if (!warned.has(token.tier)) {
      warned.add(token.tier);
      logger.warn('token names an unknown rate-limit tier; counting it under the default tier', {
        event: 'ratelimit.unknown_tier',
        tier: token.tier,
        tokenId: token.id,
        defaultTier: config.rateLimit.defaultTier.name,
        configuredTiers: config.rateLimit.tiers.map((t) => t.name),
      });
    }
    return config.rateLimit.defaultTier;
  };
}
