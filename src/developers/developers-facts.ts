import type { Config } from '../config/config';
import { JsonRpcCode, jsonRpcError } from '../http/json-rpc-error';
import { setRateLimitHeaders } from '../http/rate-limit-headers';
import { refusalBody } from '../http/refusal-body';
import type { Decision } from '../limiter/decision';
import type { RateLimitPolicy } from '../limiter/policy';
import { toDecision } from '../limiter/rate-limiter';

/** A fixed instant for the examples, so the page is a pure function of the config (2026-01-01T00:00:18Z). */
export const EXAMPLE_NOW_MS = 1_767_225_618_000;

export interface TierFact {
  readonly name: string;
  readonly limit: number;
  readonly windowSeconds: number;
  readonly isDefault: boolean;
}

/**
 * Everything the page states, derived from the config in one place, so no
 * figure is typed into the markup by hand.
 */
export interface DevelopersFacts {
  readonly tiers: readonly TierFact[];
  readonly defaultTier: TierFact;
  readonly authFailures: { readonly limit: number; readonly windowSeconds: number };
  /** Requests without a known-valid token, per address and instance. */
  readonly unauthenticated: { readonly limit: number; readonly windowSeconds: number };
  /** Requests refused before the limiter (malformed, oversized, unsupported), per token and instance. */
  readonly refusedRequests: { readonly limit: number; readonly windowSeconds: number };
  readonly backend: Config['rateLimit']['backend'];
  readonly backendLabel: string;
  /** True when every instance counts against one store. */
  readonly shared: boolean;
  readonly failurePolicy: Config['rateLimit']['failurePolicy'];
  readonly timeoutMs: number;
  readonly tokenCacheSeconds: number;
  readonly baseUrl: string;
  readonly mcpUrl: string;
  /** Headers of an allowed call and of a refused one, produced by the code that sets them on real responses. */
  readonly allowedHeaders: readonly (readonly [string, string])[];
  readonly refusedHeaders: readonly (readonly [string, string])[];
  readonly refusedBody: unknown;
}

const BACKEND_LABELS: Record<Config['rateLimit']['backend'], string> = {
  memory: "each instance's own memory",
  rtdb: 'Firebase Realtime Database',
  redis: 'Redis',
};

export function windowSeconds(policy: RateLimitPolicy): number {
  return Math.round(policy.windowMs / 1000);
}

function tierFact(policy: RateLimitPolicy, defaultName: string): TierFact {
  return { name: policy.name, limit: policy.limit, windowSeconds: windowSeconds(policy), isDefault: policy.name === defaultName };
}

function exampleDecision(policy: RateLimitPolicy, shared: boolean, allowed: boolean, nowMs: number): Decision {
  const resetAtMs = (Math.floor(nowMs / policy.windowMs) + 1) * policy.windowMs;
  const decision = { allowed, limit: policy.limit, remaining: allowed ? policy.limit - 1 : 0, resetAtMs, retryAfterMs: allowed ? 0 : resetAtMs - nowMs };
  return toDecision({ allowed, decisions: [decision] }, [policy], shared);
}

function headersOf(decision: Decision, nowMs: number): [string, string][] {
  const headers: [string, string][] = [];
  setRateLimitHeaders({ setHeader: (name, value) => headers.push([name, value]) }, decision, nowMs);
  return headers;
}

export function developersFacts(config: Config, baseUrl: string, nowMs: number = EXAMPLE_NOW_MS): DevelopersFacts {
  const { rateLimit } = config;
  const defaultTier = tierFact(rateLimit.defaultTier, rateLimit.defaultTier.name);
  const shared = rateLimit.backend !== 'memory';
  const refused = exampleDecision(rateLimit.defaultTier, shared, false, nowMs);
  const body = refusalBody(refused);
  return {
    tiers: rateLimit.tiers.map((tier) => tierFact(tier, rateLimit.defaultTier.name)),
    defaultTier,
    authFailures: { limit: rateLimit.authFailures.limit, windowSeconds: windowSeconds(rateLimit.authFailures) },
    unauthenticated: { limit: rateLimit.unauthenticated.limit, windowSeconds: windowSeconds(rateLimit.unauthenticated) },
    refusedRequests: { limit: rateLimit.refusedRequests.limit, windowSeconds: windowSeconds(rateLimit.refusedRequests) },
    backend: rateLimit.backend,
    backendLabel: BACKEND_LABELS[rateLimit.backend],
    shared,
    failurePolicy: rateLimit.failurePolicy,
    timeoutMs: rateLimit.timeoutMs,
    tokenCacheSeconds: Math.ceil(config.tokens.cacheTtlMs / 1000),
    baseUrl,
    mcpUrl: `${baseUrl}/mcp`,
    allowedHeaders: headersOf(exampleDecision(rateLimit.defaultTier, shared, true, nowMs), nowMs),
    refusedHeaders: headersOf(refused, nowMs),
    refusedBody: jsonRpcError(1, JsonRpcCode.RateLimited, String(body.message), body),
  };
}
