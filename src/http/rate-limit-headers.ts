import type { Decision } from '../limiter/decision';

export interface HeaderTarget {
  setHeader(name: string, value: string): unknown;
}

// Policy strings change only with configuration; build each once, not per request.
const policyHeaderCache = new Map<string, string>();

function policyHeader(decision: Decision): string {
  const cacheKey = `${decision.policyName}|${decision.limit}|${decision.windowMs}`;
  let value = policyHeaderCache.get(cacheKey);
  if (value === undefined) {
    value = `"${decision.policyName}";q=${decision.limit};w=${Math.round(decision.windowMs / 1000)}`;
    policyHeaderCache.set(cacheKey, value);
  }
  return value;
}

/** Whole seconds, at least 1, so a client that obeys never comes back early. */
export function secondsUntil(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The de-facto x-ratelimit-* trio and the IETF fields of
 * draft-ietf-httpapi-ratelimit-headers-10, all from one decision.
 */
export function setRateLimitHeaders(res: HeaderTarget, decision: Decision, nowMs: number): void {
  const resetSeconds = Math.max(0, Math.ceil((decision.resetAtMs - nowMs) / 1000));
  const remaining = String(decision.remaining);
  res.setHeader('x-ratelimit-limit', String(decision.limit));
  res.setHeader('x-ratelimit-remaining', remaining);
  res.setHeader('x-ratelimit-reset', String(Math.ceil(decision.resetAtMs / 1000)));
  res.setHeader('RateLimit-Policy', policyHeader(decision));
  res.setHeader('RateLimit', `"${decision.policyName}";r=${remaining};t=${resetSeconds}`);
  if (!decision.allowed) res.setHeader('Retry-After', String(secondsUntil(decision.retryAfterMs)));
}
