/**
 * A published limit: at most `limit` units of cost per fixed window of
 * `windowMs`. `name` is what the IETF RateLimit-Policy header calls it.
 */
export interface RateLimitPolicy {
  readonly name: string;
  readonly limit: number;
  readonly windowMs: number;
}

/** Throws a RangeError naming the bad field; policies come from config and must never be "fixed up". */
export function assertValidPolicy(policy: RateLimitPolicy): void {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(policy.name)) {
    throw new RangeError(`policy name must be 1-64 characters of [A-Za-z0-9_-], got ${JSON.stringify(policy.name)}`);
  }
  if (!Number.isSafeInteger(policy.limit) || policy.limit < 1) {
    throw new RangeError(`policy "${policy.name}": limit must be a positive integer, got ${policy.limit}`);
  }
  if (!Number.isSafeInteger(policy.windowMs) || policy.windowMs < 1000) {
    throw new RangeError(`policy "${policy.name}": windowMs must be an integer >= 1000, got ${policy.windowMs}`);
  }
}

export function assertValidCost(cost: number): void {
  if (!Number.isSafeInteger(cost) || cost < 0) {
    throw new RangeError(`cost must be a non-negative integer, got ${cost}`);
  }
}
