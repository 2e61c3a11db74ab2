import type { App } from 'firebase-admin/app';
import type { UpstreamConfig } from '../config/config';
import { Gateway } from '../gateway/gateway';
import { UpstreamClient } from '../gateway/upstream-client';
import { UpstreamQuotaGate } from '../gateway/upstream-quota-gate';
import { resolveUpstreamPolicy } from '../limiter/upstream/upstream-policy';
import type { LimitStore } from '../limiter/limit-store';
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
  /** Tests: what goes upstream over the wire. */
  readonly fetch?: typeof fetch;
  /** Tests: a hold that advances an injected clock. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** The upstream client, the lists it serves and, with UPSTREAM_RATE, the shared quota in front of its calls. */
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
  });
  const closers: (() => Promise<void>)[] = [() => client.close()];
  let quota: UpstreamQuotaGate | undefined;
  if (config.quota !== undefined) {
    const limitStore = await options.limitStore();
    closers.push(() => limitStore.close());
    const store = await createUpstreamQuotaStore(limitStore, options.firebaseApp);
    const { limit, windowMs, headroom, maxWaitMs, dailyBudget, graceMs, holdMs } = config.quota;
    quota = new UpstreamQuotaGate({
      store,
      policy: resolveUpstreamPolicy({ limit, windowMs, headroom, maxWaitMs, dailyBudget, graceMs }),
      holdMs,
      clock: options.clock,
      sleep: options.sleep,
      events: options.metrics,
    });
  }
  const gateway = new Gateway({ client, listTtlMs: config.listTtlMs, clock: options.clock, quota, events: options.metrics });
  ref.gateway = gateway;
  await client.warmUp();
  return { gateway, close: async () => void (await Promise.allSettled(closers.map((close) => close()))) };
}
