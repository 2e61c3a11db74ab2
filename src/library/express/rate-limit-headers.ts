import type { Decision, PolicyDecision } from '../window/decision';
import { publishedLimit } from './published-limit';

export interface HeaderTarget {
  setHeader(name: string, value: string): unknown;
}

/**
 * The strings a policy contributes to every response. They change only with
 * configuration, so each is built once and reused: these headers go on every
 * request, and building a lookup key per request cost more than the lookup saved.
 */
interface PolicyStrings {
  readonly limit: number;
  readonly windowMs: number;
  readonly perWindow: number | undefined;
  readonly limitText: string;
  readonly policyText: string;
  /** `"name";r=`: the start of the RateLimit field. */
  readonly ratePrefix: string;
}

// Keyed by policy name alone (no per-request key string); bounded by the configured policy names.
const policyStringsByName = new Map<string, PolicyStrings>();

function policyStrings(decision: PolicyDecision): PolicyStrings {
  const cached = policyStringsByName.get(decision.policyName);
  if (cached !== undefined && cached.limit === decision.limit && cached.windowMs === decision.windowMs && cached.perWindow === decision.perWindow) return cached;
  const published = publishedLimit(decision);
  const built: PolicyStrings = {
    limit: decision.limit,
    windowMs: decision.windowMs,
    perWindow: decision.perWindow,
    limitText: String(decision.limit),
    // A bucket's quota is its rate; its burst rides as an extension parameter (the draft lets parameters be added).
    policyText: `"${decision.policyName}";q=${published.perWindow};w=${published.windowSeconds}${published.burst === undefined ? '' : `;burst=${published.burst}`}`,
    ratePrefix: `"${decision.policyName}";r=`,
  };
  policyStringsByName.set(decision.policyName, built);
  return built;
}

/** Whole seconds, at least 1, so a client that obeys never comes back early. */
export function secondsUntil(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * Every policy the call was held to, as RateLimit-Policy lists them:
 * `"burst";q=10;w=1, "default";q=120;w=60`; a bucket of bursts of 10 and
 * 60 a minute is `"default";q=60;w=60;burst=10`.
 */
function policyList(decision: Decision): string {
  if (decision.policies.length <= 1) return policyStrings(decision).policyText;
  return decision.policies.map((p) => policyStrings(p).policyText).join(', ');
}

/**
 * The de-facto x-ratelimit-* trio and the IETF fields of
 * draft-ietf-httpapi-ratelimit-headers-10, all from one decision.
 * RateLimit-Policy lists every policy; RateLimit and x-ratelimit-* report
 * the most restrictive one (the decision's own fields: for a bucket,
 * x-ratelimit-limit is its burst, the most x-ratelimit-remaining can be),
 * and Retry-After is when the call passes all of them.
 */
export function setRateLimitHeaders(res: HeaderTarget, decision: Decision, nowMs: number): void {
  const strings = policyStrings(decision);
  const resetSeconds = Math.max(0, Math.ceil((decision.resetAtMs - nowMs) / 1000));
  const remaining = String(decision.remaining);
  res.setHeader('x-ratelimit-limit', strings.limitText);
  res.setHeader('x-ratelimit-remaining', remaining);
  res.setHeader('x-ratelimit-reset', String(Math.ceil(decision.resetAtMs / 1000)));
  res.setHeader('RateLimit-Policy', policyList(decision));
  res.setHeader('RateLimit', `${strings.ratePrefix}${remaining};t=${resetSeconds}`);
  if (!decision.allowed) res.setHeader('Retry-After', String(secondsUntil(decision.retryAfterMs)));
}
