import type { RequestHandler } from 'express';
import { loadConfig, type Config } from '../../src/config/config';
import { createApp } from '../../src/service/create-app';
import { jsonRpcError, requestIdOf } from '../../src/http/json-rpc-error';
import { createRateLimiter } from '../../src/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/limiter/rate-limiter';
import { createCapturingLogger } from './capturing-logger';
import type { AuthenticatedToken } from '../../src/tokens/token-record';

export const GOOD_SECRET = 'fl_test_good_secret';
export const TEST_TOKEN: AuthenticatedToken = { id: 'tok_test1', name: 'test integrator', tier: 'default', scopes: ['mcp'] };

/**
 * The auth contract create-app relies on, and nothing more: a known bearer
 * secret sets res.locals.token, anything else is a 401 with a JSON-RPC body.
 * The real one (src/http/auth-middleware.ts) is tested on its own and
 * through the app in mcp-real-auth.test.ts.
 */
export function standInAuth(tokens: Readonly<Record<string, AuthenticatedToken>>): RequestHandler {
  return (req, res, next) => {
    const match = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    const token = match?.[1] === undefined ? undefined : tokens[match[1]];
    if (token === undefined) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      res.status(401).json(jsonRpcError(requestIdOf(req.body), -32001, 'Unauthorized'));
      return;
    }
    res.locals.token = token;
    next();
  };
}

export interface TestAppOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly tokens?: Readonly<Record<string, AuthenticatedToken>>;
  readonly clock?: () => number;
}

export async function buildTestApp(options: TestAppOptions = {}) {
  const config: Config = loadConfig({ RATE_LIMIT_PER_MINUTE: '120', ...options.env });
  const logger = createCapturingLogger();
  const limiter: RateLimiter = await createRateLimiter({
    backend: 'memory',
    policies: config.rateLimit.defaultTier.policies,
    clock: options.clock,
    logger,
  });
  const app = createApp({
    config,
    limiter,
    logger,
    authMiddleware: standInAuth(options.tokens ?? { [GOOD_SECRET]: TEST_TOKEN }),
    clock: options.clock,
  });
  return { app, config, limiter, logger };
}
