import type { App } from 'firebase-admin/app';
import type { Express, RequestHandler } from 'express';
import type { ToolDefinition } from '../mcp/tool-registry';
import type { Config } from '../config/config';
import { ConfigError } from '../config/config-error';
import { ownToolQuotaProblems, toolsNamedButNotServed, unknownToolProblems } from '../config/known-tools';
import { tools as defaultTools } from '../mcp/tools';
import { createDevelopersHandler } from '../developers/developers-page';
import { createAuthMiddleware } from '../http/auth-middleware';
import { createApp, type BodyTimeouts } from './create-app';
import { type BackendGuard, createRateLimiter, type FleetEstimate, type LimitStore, type PolicySet, type RateLimiter, ShardedGuard } from '../library';
import { createLimitStore, type LimitStoreSpec } from './create-limit-store';
import type { Logger } from '../shared/logger';
import { createRequestLogMiddleware } from '../logging/request-log-middleware';
import { AuthMetrics } from '../metrics/auth-metrics';
import { ChargeMetrics } from '../metrics/charge-metrics';
import { LimiterMetrics } from '../metrics/limiter-metrics';
import { CachedTokenVerifier } from '../tokens/cached-token-verifier';
import { createCallerVerifier } from '../tokens/caller-verifier';
import { signInOf } from '../http/sign-in-challenge';
import { createOverrideStore } from '../tokens/create-override-store';
import { createTokenStore } from '../tokens/create-token-store';
import { OverrideWatcher } from '../tokens/override-watcher';
import { registerFleetGauge } from '../metrics/fleet-metrics';
import { MCP_SCOPE, type TokenStore } from '../tokens/token-record';
import { closeFirebaseApp, createFirebaseApp, needsFirebase } from './firebase-app';
import { UpstreamMetrics } from '../metrics/upstream-metrics';
import type { Gateway } from '../gateway/gateway';
import { createGateway } from './create-gateway';

/** Everything the running service holds, built from one Config. */
export interface Service {
  readonly config: Config;
  readonly app: Express;
  readonly limiter: RateLimiter;
  readonly authFailureLimiter: RateLimiter;
  /** Requests without a known-valid token, per address, on this instance only. */
  readonly unauthenticatedLimiter: RateLimiter;
  readonly tokenStore: TokenStore;
  readonly metrics: LimiterMetrics;
  /** This instance's view of the runtime limit overrides. */
  readonly overrides: OverrideWatcher;
  /** UPSTREAM_MCP_URL set: the upstream /mcp fronts; undefined otherwise. */
  readonly gateway: Gateway | undefined;
  /** Closes limiters, the token store and the Firebase app; call after HTTP has drained. */
  release(): Promise<void>;
}

export interface BuildServiceOptions {
  readonly logger: Logger;
  /** Injected time for everything that reads it: limiters, token cache, headers, tools; default Date.now. */
  readonly clock?: () => number;
  /**
   * Replaces the auth stack (token store lookups, failed sign-in budgets) in
   * front of /mcp. Tests of the HTTP layer only; the service never sets it.
   */
  readonly authMiddleware?: RequestHandler;
  /** The MCP tools served; default every tool in src/mcp/tools. */
  readonly tools?: readonly ToolDefinition[];
  /** Deadlines for the /mcp body to arrive; default BODY_TIMEOUT_DEFAULTS. Tests shorten them; the service never sets it. */
  readonly bodyTimeouts?: BodyTimeouts;
  /**
   * Replaces the store behind the shared limiters (per-token, namespace
   * 'rateLimits'; failed sign-ins, 'authFailures') instead of the one
   * `config.rateLimit.backend` names. Tests of a misbehaving shared store
   * through the whole service only; the service never sets it.
   */
  readonly limitStore?: (spec: LimitStoreSpec) => LimitStore;
  /** Firestore collection of the runtime overrides; default 'limitOverrides'. Tests sharing one server use their own. */
  readonly overridesCollection?: string;
  /** What the gateway's client sends upstream goes through this fetch; tests record it. Default global fetch. */
  readonly upstreamFetch?: typeof fetch;
  /** How the upstream quota waits for a near slot; tests advance an injected clock. Default setTimeout. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** What fetches the trusted issuers' key sets and discovery documents; default global fetch. */
  readonly issuerFetch?: typeof fetch;
}

/**
 * The composition root: the only place that knows which concrete parts the
 * service runs with. Everything below it takes its dependencies as arguments.
 */
export async function buildService(config: Config, options: BuildServiceOptions): Promise<Service> {
  const { logger } = options;
  // Before anything is opened: a cost or rule for a tool nobody serves is a typo, never a silent default.
  // In front of an upstream, the other names are the upstream's tools: its list is known only once it answers.
  const ownToolNames = (options.tools ?? defaultTools).map((tool) => tool.name);
  if (config.upstream === undefined) {
    const toolProblems = unknownToolProblems(config.rateLimit.calls, config.rateLimit.toolCostsFromEnv, ownToolNames);
    if (toolProblems.length > 0) throw new ConfigError(toolProblems);
  } else {
    const quotaProblems = ownToolQuotaProblems(config.upstream.toolQuotas.keys(), ownToolNames);
    if (quotaProblems.length > 0) throw new ConfigError(quotaProblems);
    const upstreamTools = toolsNamedButNotServed(config.rateLimit.calls, ownToolNames);
    if (upstreamTools.length > 0) {
      logger.info('costs and rules name tools firelimit does not serve: they apply to the upstream tools of those names', { event: 'config.upstream_tool_policies', tools: upstreamTools });
    }
  }
  const firebaseApp = needsFirebase(config) ? createFirebaseApp(config) : undefined;
  const opened: { close(): Promise<void> }[] = [];
  const release = async (): Promise<void> => {
    await Promise.allSettled(opened.map((resource) => resource.close()));
    if (firebaseApp !== undefined) await closeFirebaseApp(firebaseApp);
  };
  try {
    const metrics = new LimiterMetrics();
    // One guard for every limit on the shared backend (token limits, sign-in budget, upstream quota):
    // one outage is one line each way and one metric, and the second call of a request does not
    // wait again for what the first found down. One outage per shard where a store has several
    // (FIREBASE_DATABASE_URLS): a failing database puts only its own keys on local windows.
    const guard =
      config.rateLimit.backend === 'memory'
        ? undefined
        : new ShardedGuard({ backend: config.rateLimit.backend, timeoutMs: config.rateLimit.timeoutMs, probeIntervalMs: config.rateLimit.probeIntervalMs, logger, metrics });
    const limiter = await createLimiter(config, firebaseApp, {
      guard,
      policies: config.rateLimit.defaultTier.policies,
      logger,
      metrics,
      clock: options.clock,
      namespace: 'rateLimits',
      storeOverride: options.limitStore,
    });
    opened.push(limiter);
    if (limiter.fleet !== undefined) registerFleetGauge(metrics.registry, limiter.fleet);
    // Failed sign-ins get their own key space and figure on the same backend.
    const authFailureLimiter = await createLimiter(config, firebaseApp, {
      guard,
      // One heartbeat per instance: the token limiter's estimate of the fleet, lent (ADR 0067).
      fleet: limiter.fleet,
      policies: [config.rateLimit.authFailures],
      logger,
      metrics: new LimiterMetrics({ registry: metrics.registry, limiter: 'sign_in' }),
      clock: options.clock,
      namespace: 'authFailures',
      storeOverride: options.limitStore,
    });
    opened.push(authFailureLimiter);
    // Local on purpose: what it stops is a flood, and counting a flood in the shared store would be the flood's goal.
    const unauthenticatedLimiter = await createRateLimiter({ policy: config.rateLimit.unauthenticated, clock: options.clock });
    opened.push(unauthenticatedLimiter);
    const refusedRequestLimiter = await createRateLimiter({ policy: config.rateLimit.refusedRequests, clock: options.clock });
    opened.push(refusedRequestLimiter);
    // Connect before taking traffic: a request that arrived while a client was
    // still connecting would open an outage for a whole probe interval.
    const ready = await Promise.all([limiter.whenReady(config.rateLimit.timeoutMs), authFailureLimiter.whenReady(config.rateLimit.timeoutMs)]);
    if (ready.includes(false)) {
      logger.warn('rate limit backend not reachable at startup; serving by the failure policy until it is', {
        event: 'ratelimit.backend_not_ready',
        backend: config.rateLimit.backend,
        waitedMs: config.rateLimit.timeoutMs,
        failurePolicy: config.rateLimit.failurePolicy,
      });
    }
    const tokenStore = await createTokenStore(config, { app: firebaseApp, logger });
    opened.push(tokenStore);
    const overrides = new OverrideWatcher({
      store: await createOverrideStore(config, { app: firebaseApp, collection: options.overridesCollection }),
      pollMs: config.tokens.overridesPollMs,
      logger,
      clock: options.clock,
    });
    opened.push(overrides);
    await overrides.start();

    let gateway: Gateway | undefined;
    if (config.upstream !== undefined) {
      const spec: LimitStoreSpec = { namespace: 'upstreamQuota', logger, clock: options.clock };
      const parts = await createGateway(config.upstream, {
        logger,
        clock: options.clock ?? Date.now,
        metrics: new UpstreamMetrics(metrics.registry),
        outage: { timeoutMs: config.rateLimit.timeoutMs, probeIntervalMs: config.rateLimit.probeIntervalMs, failurePolicy: config.rateLimit.failurePolicy, guard, fleet: limiter.fleet },
        limitStore: async () => options.limitStore?.(spec) ?? (await createLimitStore(config, firebaseApp, spec)),
        firebaseApp,
        fetch: options.upstreamFetch,
        sleep: options.sleep,
      });
      opened.push(parts);
      gateway = parts.gateway;
    }

    const tokenVerifier = new CachedTokenVerifier({ store: tokenStore, ttlMs: config.tokens.cacheTtlMs, clock: options.clock });
    // Signed-in callers (ADR 0054) beside flk_ tokens: one verifier interface, one failure accounting in the middleware.
    // Loaded only with issuers: jose is an ES module (require(esm), Node >= 20.19), and a static-token deployment never needs it.
    const jwtVerifier = config.auth.issuers.length === 0
      ? undefined
      : new (await import('../tokens/jwt-caller-verifier')).JwtCallerVerifier({ issuers: config.auth.issuers, tierNames: config.rateLimit.tiers.map((tier) => tier.name), ttlMs: config.tokens.cacheTtlMs, clock: options.clock, fetch: options.issuerFetch });
    const verifier = createCallerVerifier(tokenVerifier, jwtVerifier);
    const app = createApp({
      config,
      limiter,
      refusedRequestLimiter,
      logger,
      clock: options.clock,
      authMiddleware: options.authMiddleware ?? createAuthMiddleware({
        verifier,
        authFailureLimiter,
        authFailurePolicy: config.rateLimit.authFailures,
        unauthenticatedLimiter,
        metrics: new AuthMetrics(metrics.registry),
        trustProxyHops: config.http.trustProxyHops,
        requiredScope: MCP_SCOPE,
        logger,
        clock: options.clock,
        isWellFormed: verifier.isWellFormed,
        signIn: signInOf(config),
      }),
      developersPage: createDevelopersHandler(config, { upstreamTools: () => gateway?.lastListedTools() }),
      chargeEvents: new ChargeMetrics(metrics.registry),
      overrides: overrides.current,
      tools: options.tools,
      gateway,
      bodyTimeouts: options.bodyTimeouts,
      requestLogger: createRequestLogMiddleware(logger, { projectId: config.firebase.projectId }),
    });

    return {
      config,
      app,
      limiter,
      authFailureLimiter,
      unauthenticatedLimiter,
      tokenStore,
      metrics,
      overrides,
      gateway,
      release,
    };
  } catch (error) {
    await release();
    throw error;
  }
}

interface LimiterSpec {
  /** The backend's shared outage guard; undefined on memory. */
  readonly guard: BackendGuard | undefined;
  /** Another limiter's fleet estimate to share; default: its own (ADR 0067). */
  readonly fleet?: FleetEstimate;
  readonly policies: PolicySet;
  readonly logger: Logger;
  readonly metrics?: LimiterMetrics;
  readonly clock?: () => number;
  /** RTDB root path and Redis key prefix suffix: each limit counts in its own key space. */
  readonly namespace: string;
  /** BuildServiceOptions.limitStore. */
  readonly storeOverride?: (spec: LimitStoreSpec) => LimitStore;
}

async function createLimiter(config: Config, firebaseApp: App | undefined, spec: LimiterSpec): Promise<RateLimiter> {
  return createRateLimiter({
    store: spec.storeOverride?.(spec) ?? (await createLimitStore(config, firebaseApp, spec)),
    policies: spec.policies,
    timeoutMs: config.rateLimit.timeoutMs,
    failurePolicy: config.rateLimit.failurePolicy,
    probeIntervalMs: config.rateLimit.probeIntervalMs,
    logger: spec.logger,
    events: spec.metrics,
    clock: spec.clock,
    guard: spec.guard,
    outageShare: config.rateLimit.outageShare,
    fleetIntervalMs: config.rateLimit.fleetIntervalMs,
    ...(spec.fleet === undefined ? {} : { fleet: spec.fleet }),
    // The limiter leases only on a shared store: memory ignores it.
    hotKeys: config.rateLimit.hotKeys,
  });
}
