import type { Express, RequestHandler } from 'express';
import { loadConfig, type Config } from '../../src/config/config';
import { buildService } from '../../src/service/build-service';
import type { BodyTimeouts } from '../../src/service/create-app';
import { jsonRpcError, requestIdOf } from '../../src/library/express/json-rpc-error';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import type { ToolDefinition } from '../../src/mcp/tool-registry';
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
  readonly tools?: readonly ToolDefinition[];
  readonly bodyTimeouts?: BodyTimeouts;
}

export interface TestApp {
  readonly app: Express;
  readonly config: Config;
  /** The per-token limiter the app counts with. */
  readonly limiter: RateLimiter;
  /** Everything the service logged. */
  readonly logger: ReturnType<typeof createCapturingLogger>;
  /** Closes what buildService opened; call once the test is done with the app. */
  release(): Promise<void>;
}

/**
 * rate_limit_status is free by default (ADR 0027); the suites that count
 * calls by calling it, and read their own figures from it, price it at one
 * unit. test/integration/call-policies-http.test.ts holds the free default.
 */
export const PRICED_STATUS = { RATE_LIMIT_TOOL_COSTS: 'rate_limit_status=1' } as const;

/**
 * The service as buildService composes it (memory backend unless `env` says
 * otherwise), with standInAuth in front of /mcp instead of the token store,
 * and rate_limit_status priced at 1 (PRICED_STATUS) unless `env` says otherwise.
 */
export async function buildTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const servesStatus = options.tools === undefined || options.tools.some((tool) => tool.name === 'rate_limit_status');
  const config: Config = loadConfig({ RATE_LIMIT_PER_MINUTE: '120', ...(servesStatus ? PRICED_STATUS : {}), ...options.env });
  const logger = createCapturingLogger();
  const service = await buildService(config, {
    logger,
    clock: options.clock,
    authMiddleware: standInAuth(options.tokens ?? { [GOOD_SECRET]: TEST_TOKEN }),
    tools: options.tools,
    bodyTimeouts: options.bodyTimeouts,
  });
  return { app: service.app, config, limiter: service.limiter, logger, release: () => service.release() };
}
