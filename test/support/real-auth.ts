import type { RequestHandler } from 'express';
import type { Config } from '../../src/config/config';
import { createAuthMiddleware } from '../../src/http/auth-middleware';
import { createRateLimiter } from '../../src/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/limiter/rate-limiter';
import type { Logger } from '../../src/shared/logger';
import { CachedTokenVerifier } from '../../src/tokens/cached-token-verifier';
import { createTokenStore } from '../../src/tokens/create-token-store';
import { MCP_SCOPE, type TokenStore } from '../../src/tokens/token-record';
import { TokenService } from '../../src/tokens/token-service';

export interface RealAuth {
  readonly authMiddleware: RequestHandler;
  readonly tokens: TokenService;
  readonly store: TokenStore;
  readonly authFailureLimiter: RateLimiter;
  close(): Promise<void>;
}

/**
 * The production auth stack on the store `config.tokens` names (the file
 * store in tests: TOKENS_FILE in a temp dir), with failed attempts counted in
 * memory. What src/service wires for real, minus the Firestore branch.
 * `clock` drives the verifier's cache, so tests can step past its TTL.
 */
export async function buildRealAuth(config: Config, logger: Logger, options: { clock?: () => number } = {}): Promise<RealAuth> {
  const store = await createTokenStore(config);
  const authFailureLimiter = await createRateLimiter({ backend: 'memory', policy: config.rateLimit.authFailures, logger });
  const unauthenticatedLimiter = await createRateLimiter({ backend: 'memory', policy: config.rateLimit.unauthenticated });
  const authMiddleware = createAuthMiddleware({
    verifier: new CachedTokenVerifier({ store, ttlMs: config.tokens.cacheTtlMs, clock: options.clock }),
    authFailureLimiter,
    authFailurePolicy: config.rateLimit.authFailures,
    unauthenticatedLimiter,
    trustProxyHops: config.http.trustProxyHops,
    requiredScope: MCP_SCOPE,
    logger,
  });
  return {
    authMiddleware,
    tokens: new TokenService({ store, tiers: config.rateLimit.tiers.map((t) => t.name) }),
    store,
    authFailureLimiter,
    async close() {
      await authFailureLimiter.close();
      await unauthenticatedLimiter.close();
      await store.close();
    },
  };
}
