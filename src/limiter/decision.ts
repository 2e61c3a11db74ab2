/**
 * Why a decision came out the way it did, so a degraded answer is never silent.
 * - `within_limit`: allowed by the counter of record.
 * - `limit`: refused, the window's budget is spent.
 * - `local_fallback`: allowed from this instance's own window because the
 *   shared backend failed or is in an outage (fail-open).
 * - `backend_unavailable`: refused because the shared backend failed and the
 *   failure policy is fail-closed. Not a rate-limit hit.
 */
export type DecisionReason = 'within_limit' | 'limit' | 'local_fallback' | 'backend_unavailable';

/** What one window computation says, before the limiter says where it came from. */
export interface WindowDecision {
  readonly allowed: boolean;
  readonly limit: number;
  /** Units left in the window after this call; never negative. */
  readonly remaining: number;
  /** Epoch ms at which the current window ends and the budget refills. */
  readonly resetAtMs: number;
  /** 0 when allowed; otherwise ms until the window ends. */
  readonly retryAfterMs: number;
}

export interface Decision extends WindowDecision {
  /**
   * True when the counter of record is shared by every instance. False when
   * this instance answered from its own window: the memory backend always,
   * a shared backend only while it is failing (fail-open).
   */
  readonly shared: boolean;
  readonly reason: DecisionReason;
  /** The policy the decision was made under (its name goes into the headers). */
  readonly policyName: string;
  readonly windowMs: number;
}
