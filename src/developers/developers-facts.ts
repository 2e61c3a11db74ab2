import type { Config } from '../config/config';
import { JsonRpcCode, jsonRpcError, refusalBody, setRateLimitHeaders } from '../library/express';
import { algorithmFor, type Decision, describePolicy, type PolicyDescription, type RateLimitPolicy, toDecision } from '../library';
import type { Tier } from '../config/tier';
import { callFacts, type CallFacts } from '../config/call-facts';

/** A fixed instant for the examples, so the page is a pure function of the config (2026-01-01T00:00:18Z). */
export const EXAMPLE_NOW_MS = 1_767_225_618_000;

export interface TierFact {
  readonly name: string;
  /** The first policy's figures: the tier's headline. */
  readonly limit: number;
  readonly windowSeconds: number;
  readonly isDefault: boolean;
  /** Every policy of the tier, each in plain words from the algorithm that enforces it. */
  readonly policies: readonly PolicyDescription[];
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
  readonly outageShare: Config['rateLimit']['outageShare'];
  readonly timeoutMs: number;
  readonly tokenCacheSeconds: number;
  readonly baseUrl: string;
  readonly mcpUrl: string;
  /** Headers of an allowed call and of a refused one, produced by the code that sets them on real responses. */
  readonly allowedHeaders: readonly (readonly [string, string])[];
  readonly refusedHeaders: readonly (readonly [string, string])[];
  readonly refusedBody: unknown;
  /** Costs, free calls and rules. */
  readonly calls: CallFacts;
}

const BACKEND_LABELS: Record<Config['rateLimit']['backend'], string> = {
  memory: "each instance's own memory",
  rtdb: 'Firebase Realtime Database',
  redis: 'Redis',
  sqlite: "one SQLite file shared by this host's processes",
};

export function windowSeconds(policy: RateLimitPolicy): number {
  return Math.round(policy.windowMs / 1000);
}

function tierFact(tier: Tier, defaultName: string): TierFact {
  const first = tier.policies[0];
  return { name: tier.name, limit: first.limit, windowSeconds: windowSeconds(first), isDefault: tier.name === defaultName, policies: tier.policies.map(describePolicy) };
}

/**
 * The headers of a first call (allowed) and of a call once the budget is
 * spent (refused), computed by the algorithms that enforce the tier, so the
 * example is what a real response carries.
 */
function exampleDecision(tier: Tier, shared: boolean, allowed: boolean, nowMs: number): Decision {
  const { policies } = tier;
  if (allowed) {
    const decisions = policies.map((policy) => algorithmFor(policy).decide(null, nowMs, policy, 1).decision);
    return toDecision({ allowed, decisions }, policies, shared);
  }
  // Spend the tightest policy to its end, then ask once more.
  const states: unknown[] = policies.map(() => null);
  const tightest = policies.reduce((a, b) => (algorithmFor(a).maxCost(a) <= algorithmFor(b).maxCost(b) ? a : b));
  const i = policies.indexOf(tightest);
  states[i] = algorithmFor(tightest).decide(null, nowMs, tightest, algorithmFor(tightest).maxCost(tightest)).next;
  const decisions = policies.map((policy, j) => algorithmFor(policy).decide(states[j] ?? null, nowMs, policy, 1).decision);
  return toDecision({ allowed: decisions.every((d) => d.allowed), decisions }, policies, shared);
}

function budgetFact(policy: RateLimitPolicy): { readonly limit: number; readonly windowSeconds: number } {
  return { limit: policy.limit, windowSeconds: windowSeconds(policy) };
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
    authFailures: budgetFact(rateLimit.authFailures),
    unauthenticated: budgetFact(rateLimit.unauthenticated),
    refusedRequests: budgetFact(rateLimit.refusedRequests),
    backend: rateLimit.backend,
    backendLabel: BACKEND_LABELS[rateLimit.backend],
    shared,
    failurePolicy: rateLimit.failurePolicy,
    outageShare: rateLimit.outageShare,
    timeoutMs: rateLimit.timeoutMs,
    tokenCacheSeconds: Math.ceil(config.tokens.cacheTtlMs / 1000),
    baseUrl,
    mcpUrl: `${baseUrl}/mcp`,
    allowedHeaders: headersOf(exampleDecision(rateLimit.defaultTier, shared, true, nowMs), nowMs),
    refusedHeaders: headersOf(refused, nowMs),
    refusedBody: jsonRpcError(1, JsonRpcCode.RateLimited, String(body.message), body),
    calls: callFacts(config),
  };
}
