import express, { type ErrorRequestHandler, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Config } from '../config/config';
import { describeError } from '../shared/describe-error';
import type { RateLimiter } from '../library';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken } from '../tokens/token-record';
import { createMcpHandler } from '../mcp/mcp-handler';
import { capabilitiesOf } from '../mcp/build-mcp-server';
import { servedMethodsOf } from '../mcp/served-methods';
import { tools as defaultTools } from '../mcp/tools';
import type { Gateway } from '../gateway/gateway';
import { startWaitBudget, tokenOf } from '../http/request-locals';
import { writeMcpRefusal } from '../mcp/mcp-refusal';
import type { ToolDefinition } from '../mcp/tool-registry';
import { createHostValidation } from '../http/host-validation';
import { handlerChain } from '../http/handler-chain';
import { createBudgetReader } from '../http/caller-budgets';
import { createChargeMiddleware } from '../http/charge-middleware';
import { createDeclaredLengthCheck, createJsonRpcBody } from '../http/json-rpc-body';
import { MAX_JSON_DEPTH } from '../http/json-structure-scan';
import { createUnreadBodyGuard, type LingerLimits } from '../http/lingering-close';
import { createMcpProtocolCheck } from '../http/mcp-protocol-check';
import { JsonRpcCode, jsonRpcError, requestIdOf } from '../library/express';
import { createRefusedRequestBudget } from '../http/refused-request-budget';
import { installHeadHooks } from '../http/response-head-hook';
import { createTierResolver } from '../http/tier-policy';
import { addressLimitKeyPart, clientAddress } from '../http/client-address';
import { createOAuthNotOffered, OAUTH_METADATA_PATHS, REGISTRATION_PATH } from '../http/oauth-not-offered';
import { signInOf } from '../http/sign-in-challenge';
import { createProtectedResourceMetadataHandler, PROTECTED_RESOURCE_WELL_KNOWN, servesProtectedResourceMetadata } from '../http/protected-resource-metadata';
import { callTargetsOf } from '../library/mcp';
import type { ChargeEvents } from '../policies/charge-events';
import { NO_OVERRIDES, type OverrideIndex } from '../policies/limit-override';
import { resolveCharges, type ResolverConfig } from '../policies/resolve-charges';

export const MCP_PATH = '/mcp';

export interface AppDependencies {
  readonly config: Config;
  /** The per-token limiter (key = token id). */
  readonly limiter: RateLimiter;
  /**
   * Verifies the bearer token and sets `res.locals.token` (an AuthenticatedToken);
   * answers 401/403 (and 429 for too many failed attempts) itself.
   * Built by createAuthMiddleware in ./auth-middleware.
   */
  readonly authMiddleware: RequestHandler;
  readonly logger: Logger;
  /** GET /developers; not served when absent. */
  readonly developersPage?: RequestHandler;
  /** Runs first on every request (access logs). */
  readonly requestLogger?: RequestHandler;
  /** Time for the headers' relative seconds and for tools; default Date.now. The limiter has its own clock. */
  readonly clock?: () => number;
  /**
   * Counts requests refused before the limiter, per token (a memory limiter
   * on `config.rateLimit.refusedRequests`); buildService always passes one.
   * Absent: such refusals are not budgeted (tests of other parts).
   */
  readonly refusedRequestLimiter?: RateLimiter;
  /** Default: every tool in src/mcp/tools. */
  readonly tools?: readonly ToolDefinition[];
  /** UPSTREAM_MCP_URL set: the upstream /mcp fronts. */
  readonly gateway?: Gateway;
  /** Deadlines for the /mcp body to arrive; default BODY_TIMEOUT_DEFAULTS. */
  readonly bodyTimeouts?: BodyTimeouts;
  /** The runtime overrides in force now (a watcher's latest snapshot); default none. */
  readonly overrides?: () => OverrideIndex;
  /** Told of every charge and shadow refusal (metrics); default none. */
  readonly chargeEvents?: ChargeEvents;
}

export interface BodyTimeouts {
  /** The longest silence between two chunks of a body. */
  readonly idleTimeoutMs: number;
  /** The longest a whole body may take. */
  readonly totalTimeoutMs: number;
}

/**
 * A 1 MiB body (the MAX_BODY_BYTES default) takes about 8.4 s on a
 * 1 Mbit/s uplink, so 15 s in all leaves room for slow honest clients and
 * still answers 408 well before Node's requestTimeout (30 s) would cut the
 * connection without a word. 5 s of silence mid-body is not a slow network.
 */
export const BODY_TIMEOUT_DEFAULTS: BodyTimeouts = { idleTimeoutMs: 5_000, totalTimeoutMs: 15_000 };

/**
 * After a refusal that came before the body was read (401 and the like): a
 * short linger, enough for a client on a real network to read the answer,
 * and at most 64 KiB discarded, so a caller without a token cannot make us
 * read its megabyte.
 */
const UNREAD_BODY_LINGER: LingerLimits = { lingerMs: 250, maxDiscardBytes: 65_536 };

/**
 * The HTTP service. POST /mcp runs its checks cheapest first, each answering
 * with a JSON-RPC error body, so that an unauthenticated caller costs us
 * headers only and nothing refused is charged:
 *
 * 1. Host/Origin (403), and an absolute-form target's authority
 * 2. Content-Length over MAX_BODY_BYTES (413, Connection: close), nothing read
 * 3. auth (401/403/429 per address): the token is a header, so no body is
 *    read, parsed or validated for a caller without a valid one; a refusal
 *    here while the body is still arriving closes the connection rather
 *    than drain it
 * 3b. the token's budget of refused requests (429, REFUSED_REQUESTS_PER_MINUTE):
 *    the refusals below are never charged to the published limit, so this
 *    is what stops a token holder from sending them without end
 * 4. Content-Type/Content-Encoding (415), bounded read (413, 408); only here
 *    does a client waiting on `Expect: 100-continue` get its `100 Continue`
 *    (../http/expect-continue, on the listener of ./listen-dual-stack)
 * 5. structure scan: depth and batch size (400), before any parser runs
 * 6. JSON.parse (400 -32700), JSON-RPC shape (400 -32600)
 * 7. the MCP transport's own refusals made early (406/415/400), uncharged
 * 8. the request priced (src/policies): cost above what a policy's window
 *    can ever hold (413), uncharged
 * 9. every limit that holds it, all or nothing (429/503), then the MCP handler.
 */
export function createApp(deps: AppDependencies): express.Express {
  const { config, limiter, logger } = deps;
  const clock = deps.clock ?? Date.now;
  const policyFor = createTierResolver(config, logger);
  const { maxBatchMessages } = config.http;
  const bodyTimeouts = deps.bodyTimeouts ?? BODY_TIMEOUT_DEFAULTS;

  const app = express();
  app.disable('x-powered-by');
  // Before any route: the refused-request budget acts when a response's head is written.
  installHeadHooks(app);
  // req.ip comes from X-Forwarded-For through exactly this many proxies (1 on Cloud Run), never the whole header.
  app.set('trust proxy', config.http.trustProxyHops);
  if (deps.requestLogger !== undefined) app.use(deps.requestLogger);

  app.get('/healthz', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json({ status: 'ok' });
  });
  if (deps.developersPage !== undefined) app.get('/developers', deps.developersPage);

  const resolver: ResolverConfig = {
    tiers: config.rateLimit.tiers,
    defaultTier: config.rateLimit.defaultTier,
    policies: config.rateLimit.calls,
    tools: new Set((deps.tools ?? defaultTools).map((tool) => tool.name)),
    // A method the server does not answer (-32601) costs nothing (issue 17: an even handshake).
    servedMethods: servedMethodsOf(capabilitiesOf(deps.gateway)),
  };
  const overrides = deps.overrides ?? (() => NO_OVERRIDES);
  // Per-address rules (ADR 0055) key on the address exactly as the sign-in budget does: trusted hops only, IPv6 per /64.
  const addressOf = (req: Request): string =>
    addressLimitKeyPart(clientAddress({ forwardedFor: req.headers['x-forwarded-for'], socketAddress: req.socket.remoteAddress }, config.http.trustProxyHops));
  const charge = createChargeMiddleware({
    limiter,
    // What the request costs and which limits hold it (tier or override, rules, free calls): ADR 0027.
    plan: (req, res) => resolveCharges(resolver, callTargetsOf(req.body), { ...tokenOrThrow(res), address: addressOf(req) }, overrides(), clock()),
    logger,
    events: deps.chargeEvents,
    refuse: writeMcpRefusal,
    clock,
  });

  app.post(
    MCP_PATH,
    handlerChain([
      (_req: Request, res: Response, next: NextFunction) => {
        // One wait for the shared stores per request, whichever limits it meets (ADR 0047).
        startWaitBudget(res, config.rateLimit.timeoutMs);
        next();
      },
      createHostValidation({ allowedHosts: config.http.allowedHosts, allowAnyHost: config.http.allowAnyHost }),
      createDeclaredLengthCheck({ maxBodyBytes: config.http.maxBodyBytes }),
      createUnreadBodyGuard(UNREAD_BODY_LINGER),
      deps.authMiddleware,
      ...(deps.refusedRequestLimiter === undefined ? [] : [createRefusedRequestBudget({ limiter: deps.refusedRequestLimiter, clock })]),
      createJsonRpcBody({ maxBodyBytes: config.http.maxBodyBytes, ...bodyTimeouts, maxDepth: MAX_JSON_DEPTH, maxBatchMessages }),
      createMcpProtocolCheck(),
      charge,
      createMcpHandler({ config, limiter, logger, clock, policyFor, tools: deps.tools, gateway: deps.gateway, budgetsOf: createBudgetReader({ limiter, resolver, overrides, clock, addressOf: (res) => addressOf(res.req) }) }),
    ]),
  );
  // Stateless server: no SSE stream to GET, no session to DELETE.
  app.all(MCP_PATH, (req, res) => {
    res.setHeader('Allow', 'POST');
    res
      .status(405)
      .json(jsonRpcError(null, -32000, `Method ${req.method} not allowed on ${MCP_PATH}: this server is stateless, send JSON-RPC with POST`));
  });

  // With OAuth issuers configured, real RFC 9728 metadata naming them (ADR 0054); the other OAuth paths still answer as ADR 0025 says.
  if (servesProtectedResourceMetadata(config.auth)) {
    const metadata = createProtectedResourceMetadataHandler({ auth: config.auth, fallbackPort: config.port, mcpPath: MCP_PATH });
    app.get([PROTECTED_RESOURCE_WELL_KNOWN, `${PROTECTED_RESOURCE_WELL_KNOWN}${MCP_PATH}`], metadata);
  }
  // OAuth discovery after our 401: an answer that says how to authenticate instead (ADR 0025), not the generic 404.
  const oauth = createOAuthNotOffered({ fallbackPort: config.port, protectedResourceMetadataUrl: signInOf(config)?.resourceMetadataUrl });
  app.all(OAUTH_METADATA_PATHS as RegExp[], createUnreadBodyGuard(UNREAD_BODY_LINGER), oauth.metadata);
  app.all(REGISTRATION_PATH, createUnreadBodyGuard(UNREAD_BODY_LINGER), oauth.registration);

  app.use((req, res) => {
    res.status(404).json({ error: 'not_found', message: `No route for ${req.method} ${req.path}` });
  });
  app.use(createErrorHandler(logger));
  return app;
}

function tokenOrThrow(res: Response): AuthenticatedToken {
  const token = tokenOf(res);
  // Thrown inside the middleware's key(); it reaches the error handler as a 500, never an uncounted call.
  if (token === undefined) throw new Error('rate limit reached without res.locals.token: the auth middleware did not run');
  return token;
}

/**
 * The last word on any error: a generic message, never a stack trace or an
 * error's own text (which may quote a header or a URL with credentials). The
 * log gets the error's class, code and stack frames, not its message.
 */
export function createErrorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const status = clientErrorStatus(error);
    if (status === undefined) {
      logger.error('request failed', {
        event: 'http.unhandled_error',
        method: req.method,
        path: req.path,
        error: describeError(error),
        frames: stackFrames(error),
      });
    }
    if (res.headersSent) {
      // Half a response is already out; the only honest thing left is to cut the connection.
      res.destroy();
      return;
    }
    const code = status ?? 500;
    if (req.path === MCP_PATH) {
      const rpcCode = code === 500 ? JsonRpcCode.InternalError : JsonRpcCode.InvalidRequest;
      res.status(code).json(jsonRpcError(requestIdOf(req.body), rpcCode, code === 500 ? 'Internal error' : 'Bad request'));
      return;
    }
    res.status(code).json(code === 500 ? { error: 'internal_error', message: 'Internal server error' } : { error: 'bad_request', message: 'Bad request' });
  };
}

/** A 4xx an Express layer attached to its error (e.g. a malformed URL), or undefined for a server fault. */
function clientErrorStatus(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const status = (error as { status?: unknown; statusCode?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 500 ? status : undefined;
}

function stackFrames(error: unknown): string[] | undefined {
  const stack = error instanceof Error ? error.stack : undefined;
  if (stack === undefined) return undefined;
  return stack
    .split('\n')
    .filter((line) => line.trimStart().startsWith('at '))
    .slice(0, 10)
    .map((line) => line.trim());
}
