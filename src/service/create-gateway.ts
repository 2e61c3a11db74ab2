import type { App } from 'firebase-admin/app';
import { anyUpstreamQuota, type UpstreamConfig, type UpstreamQuotaConfig } from '../config/config';
import { Gateway } from '../gateway/gateway';
import { UpstreamClient } from '../gateway/upstream-client';
import { UpstreamQuotaGate } from '../gateway/upstream-quota-gate';
import { GuardedUpstreamQuota, resolveUpstreamPolicy, type UpstreamPolicy } from '../library/quota';
import { type BackendGuard, type FailurePolicy, type FleetEstimate, type LimitStore, OutageGuard } from '../library';
import type { UpstreamMetrics } from '../metrics/upstream-metrics';
import type { Logger } from '../shared/logger';
import { createUpstreamQuotaStore } from './create-upstream-quota-store';

export interface GatewayParts {
  readonly gateway: Gateway;
  close(): Promise<void>;
}

export interface CreateGatewayOptions {
  readonly logger: Logger;
  readonly clock: () => number;
  readonly metrics: UpstreamMetrics;
  /** The store the quota's backend comes from (memory, RTDB, Redis); required when the config has a quota. */
  readonly limitStore: () => Promise<LimitStore>;
  readonly firebaseApp: App | undefined;
  /** RATE_LIMIT_TIMEOUT_MS, RATE_LIMIT_PROBE_INTERVAL_MS and RATE_LIMIT_FAILURE_POLICY: the quota's backend is the limiter's. */
  readonly outage: {
    readonly timeoutMs: number;
    readonly probeIntervalMs: number;
    readonly failurePolicy: FailurePolicy;
    /** The limiters' outage guard on the same backend, shared: one outage line and metric per store. Default: one of the quota's own. */
    readonly guard?: BackendGuard;
    /** The token limiter's estimate of the live instances: a fail-open outage schedules on this instance's share (ADR 0067). */
    readonly fleet?: FleetEstimate;
  };
  /** Tests: what goes upstream over the wire. */
  readonly fetch?: typeof fetch;
  /** Tests: a hold that advances an injected clock. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** The upstream client, the lists it serves and, with UPSTREAM_RATE or tool quotas, the quota gate in front of its calls. */
export async function createGateway(config: UpstreamConfig, options: CreateGatewayOptions): Promise<GatewayParts> {
  // The client is built before the Gateway it tells about list changes.
  const ref: { gateway?: Gateway } = {};
  const client = new UpstreamClient({
    url: config.url,
    authorization: config.authorization,
    timeoutMs: config.timeoutMs,
    logger: options.logger,
    onListChanged: () => ref.gateway?.invalidate(),
    fetch: options.fetch,
    maxSessions: config.sessionsMax,
    sessionIdleMs: config.sessionIdleMs,
    clock: options.clock,
  });
  const closers: (() => Promise<void>)[] = [() => client.close()];
  let quota: UpstreamQuotaGate | undefined;
  if (config.quota !== undefined || config.toolQuotas.size > 0) {
    const limitStore = await options.limitStore();
    closers.push(() => limitStore.close());
    const shared = await createUpstreamQuotaStore(limitStore, options.firebaseApp);
    if (shared.backend === 'memory') {
      // The page says so too: a quota the operator set for the whole service is, here, each instance's.
      options.logger.warn('the upstream quota is kept in memory: it holds per instance, so N instances can send the upstream N times UPSTREAM_RATE; set RATE_LIMIT_BACKEND=redis or rtdb to share it', {
        event: 'config.upstream_quota_per_instance',
      });
    }
    // Memory cannot be down; a shared backend gets the limiter's deadline and outage handling (ADR 0040).
    const store =
      shared.backend === 'memory'
        ? shared
        : new GuardedUpstreamQuota({
            store: shared,
            guard:
              options.outage.guard ??
              new OutageGuard({ backend: shared.backend, limiter: 'upstream-quota', timeoutMs: options.outage.timeoutMs, probeIntervalMs: options.outage.probeIntervalMs, logger: options.logger }),
            failurePolicy: options.outage.failurePolicy,
            onUnshared: options.metrics.onUnshared,
            ...(options.outage.fleet === undefined ? {} : { fleet: options.outage.fleet }),
          });
    quota = new UpstreamQuotaGate({
      store,
      ...(config.quota === undefined ? {} : { shared: policyOf(config.quota) }),
      tools: new Map([...config.toolQuotas].map(([tool, q]) => [tool, policyOf(q)])),
      ...(config.costs === undefined ? {} : { costs: config.costs }),
      // One hold for every quota: it is what a held request may cost, whichever quota made it wait.
      holdMs: (anyUpstreamQuota(config) as UpstreamQuotaConfig).holdMs,
      clock: options.clock,
      sleep: options.sleep,
      events: options.metrics,
    });
  }
  const gateway = new Gateway({ client, listTtlMs: config.listTtlMs, ...(config.lists === 'per-caller' ? { perCallerLists: { maxCallers: config.sessionsMax } } : {}), clock: options.clock, quota, events: options.metrics, logger: options.logger });
  ref.gateway = gateway;
  // Only once the upstream answered: asking a down upstream for its list would hold the boot for its timeout.
  if (await client.warmUp()) {
    // What the upstream offers decides what the servers, built once after this, advertise (completions).
    await gateway.learnCapabilities();
    await warnOfUnlistedQuotaTools(gateway, config, options.logger);
  }
  return { gateway, close: async () => void (await Promise.allSettled(closers.map((close) => close()))) };
}

function policyOf(quota: UpstreamQuotaConfig): UpstreamPolicy {
  const { limit, windowMs, headroom, maxWaitMs, dailyBudget, graceMs, maxReservationsPerToken } = quota;
  // A per-token cap above the queue's cap would mean nothing: the queue's cap (100) is the larger bound.
  return resolveUpstreamPolicy({ limit, windowMs, headroom, maxWaitMs, dailyBudget, graceMs, ...(maxReservationsPerToken === undefined ? {} : { maxReservationsPerHolder: maxReservationsPerToken }) });
}

/** A quota for a tool the upstream does not list is likely a typo; it is not a boot error, since the list can change. */
async function warnOfUnlistedQuotaTools(gateway: Gateway, config: UpstreamConfig, logger: Logger): Promise<void> {
  if (config.toolQuotas.size === 0) return;
  try {
    const listed = new Set((await gateway.tools()).map((tool) => tool.name));
    const unlisted = [...config.toolQuotas.keys()].filter((tool) => !listed.has(tool)).sort();
    if (unlisted.length > 0) {
      logger.warn('the limits file gives upstream quotas for tools the upstream does not list; they apply only if it lists them later', { event: 'config.upstream_tool_quota_unlisted', tools: unlisted });
    }
  } catch {
    // The upstream is not answering yet: warmUp has logged that, and the quotas apply once it lists its tools.
  }
}
