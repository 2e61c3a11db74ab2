/**
 * The shared upstream quota's policy, resolved to the integers the scheduler
 * (upstream-schedule.ts) and its Lua twin compute with. Built once from
 * config by `resolveUpstreamPolicy`, which refuses what cannot be honoured
 * instead of fixing it up.
 *
 * The scheduling interval is T = windowMs / (limit × headroom): with the
 * default headroom 0.9, "15/min" becomes one call every 4444.4 ms, not every
 * 4000 ms. Headroom is held in basis points so T is the exact fraction
 * (windowMs × 10 000) / (limit × headroomBp), never a rounded float
 * (docs/adr/0031-upstream-quota-cursor.md).
 */
export interface UpstreamPolicy {
  /** Calls the upstream allows per `windowMs` (the "15" of "15/min"). */
  readonly limit: number;
  readonly windowMs: number;
  /** The share of the rate we schedule, in 1/10 000 (9000 = 0.9). */
  readonly headroomBp: number;
  /** The farthest slot handed out; a caller whose slot would be later is rejected. */
  readonly maxWaitMs: number;
  /** Calls per UTC day, counted when a slot is handed out; 0 = no daily budget. */
  readonly dailyBudget: number;
  /** How long after its slot a reservation may still be claimed; later, it expires and its slot is lost. */
  readonly graceMs: number;
  /** The most reservations outstanding at once; past it, a caller who would wait is rejected. */
  readonly maxReservations: number;
  /** The most one holder (a token) may hold at once, in [1, maxReservations]: its fair share. */
  readonly maxReservationsPerHolder: number;
}

export interface UpstreamPolicyOptions {
  readonly limit: number;
  readonly windowMs: number;
  /** Fraction of the rate used, in (0, 1], at most 4 decimals. Default 0.9. */
  readonly headroom?: number;
  /** Default 60 000. */
  readonly maxWaitMs?: number;
  /** Default: none. */
  readonly dailyBudget?: number;
  /** Default 1000: a client told to come back is late by its round trip, not by seconds. */
  readonly graceMs?: number;
  /** Default 100. */
  readonly maxReservations?: number;
  /** Default: defaultReservationsPerHolder, a quarter of the slots within maxWaitMs. */
  readonly maxReservationsPerHolder?: number;
}

/**
 * A token's fair share of the queue: a quarter of the reservations that fit
 * within maxWaitMs (each takes T + graceMs of it), at least 1 and at most
 * maxReservations. 2/s at 0.9 with a 1 s grace and 60 s: 39 fit, 10 each;
 * 15/min: 12 fit, 3 each. So four tokens that never come back fill the
 * queue, not one (issue 17: one token held a slot per tool, 12 in all).
 */
export function defaultReservationsPerHolder(limit: number, windowMs: number, headroomBp: number, maxWaitMs: number, graceMs: number, maxReservations: number): number {
  const numerator = windowMs * BASIS_POINTS;
  const denominator = limit * headroomBp;
  // Slots within maxWaitMs: floor(maxWaitMs / (T + graceMs)) + 1, on integers (T = numerator / denominator).
  const fit = Math.floor((maxWaitMs * denominator) / (numerator + graceMs * denominator)) + 1;
  return Math.min(maxReservations, Math.max(1, Math.ceil(fit / 4)));
}

export const DEFAULT_UPSTREAM_HEADROOM = 0.9;
export const DEFAULT_UPSTREAM_MAX_WAIT_MS = 60_000;
export const DEFAULT_UPSTREAM_GRACE_MS = 1000;
export const DEFAULT_UPSTREAM_MAX_RESERVATIONS = 100;
/** RTDB rewrites every reservation on every grant (one node, one transaction): past this the node gets too big for one round trip. Redis keeps them in sorted sets (ADR 0063). */
export const MAX_UPSTREAM_RESERVATIONS = 1000;
export const BASIS_POINTS = 10_000;
export const DAY_MS = 86_400_000;

/** The numerator and denominator of T in ms: T = windowMs × 10 000 / (limit × headroomBp). */
export function intervalOf(policy: UpstreamPolicy): { readonly numerator: number; readonly denominator: number } {
  return { numerator: policy.windowMs * BASIS_POINTS, denominator: policy.limit * policy.headroomBp };
}

function wholeNumber(name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`upstream quota: ${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

/** Throws a RangeError naming the field and its bounds. */
export function resolveUpstreamPolicy(options: UpstreamPolicyOptions): UpstreamPolicy {
  const limit = wholeNumber('limit', options.limit, 1, 1_000_000);
  const windowMs = wholeNumber('windowMs', options.windowMs, 1, DAY_MS);
  const headroom = options.headroom ?? DEFAULT_UPSTREAM_HEADROOM;
  const headroomBp = Math.round(headroom * BASIS_POINTS);
  // In basis points, (0, 1] is [1, 10 000]: that also refuses a positive headroom too small for one point. NaN fails every test.
  if (!(headroomBp >= 1 && headroomBp <= BASIS_POINTS && Math.abs(headroomBp - headroom * BASIS_POINTS) <= 1e-6)) {
    throw new RangeError(`upstream quota: headroom must be a fraction in (0, 1] with at most 4 decimals, e.g. 0.9, got ${headroom}`);
  }
  const policy: UpstreamPolicy = {
    limit,
    windowMs,
    headroomBp,
    maxWaitMs: wholeNumber('maxWaitMs', options.maxWaitMs ?? DEFAULT_UPSTREAM_MAX_WAIT_MS, 0, 7 * DAY_MS),
    dailyBudget: options.dailyBudget === undefined ? 0 : wholeNumber('dailyBudget', options.dailyBudget, 1),
    graceMs: wholeNumber('graceMs', options.graceMs ?? DEFAULT_UPSTREAM_GRACE_MS, 0, DAY_MS),
    maxReservations: wholeNumber('maxReservations', options.maxReservations ?? DEFAULT_UPSTREAM_MAX_RESERVATIONS, 1, MAX_UPSTREAM_RESERVATIONS),
    maxReservationsPerHolder: 0,
  };
  const perHolder = options.maxReservationsPerHolder ?? defaultReservationsPerHolder(limit, windowMs, headroomBp, policy.maxWaitMs, policy.graceMs, policy.maxReservations);
  (policy as { maxReservationsPerHolder: number }).maxReservationsPerHolder = wholeNumber('maxReservationsPerHolder', perHolder, 1, policy.maxReservations);
  assertValidUpstreamPolicy(policy);
  return policy;
}

/** For a policy built by hand (tests, stores used directly): the same bounds as resolveUpstreamPolicy. */
export function assertValidUpstreamPolicy(policy: UpstreamPolicy): void {
  wholeNumber('limit', policy.limit, 1, 1_000_000);
  wholeNumber('windowMs', policy.windowMs, 1, DAY_MS);
  wholeNumber('headroomBp', policy.headroomBp, 1, BASIS_POINTS);
  wholeNumber('maxWaitMs', policy.maxWaitMs, 0, 7 * DAY_MS);
  wholeNumber('dailyBudget', policy.dailyBudget, 0);
  wholeNumber('graceMs', policy.graceMs, 0, DAY_MS);
  wholeNumber('maxReservations', policy.maxReservations, 1, MAX_UPSTREAM_RESERVATIONS);
  wholeNumber('maxReservationsPerHolder', policy.maxReservationsPerHolder, 1, policy.maxReservations);
}
