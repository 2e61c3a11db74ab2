import { burstOf, intervalWords, isWholeNumber, unfitRetryAfterMs, type Adjustment, type Algorithm, type AlgorithmResult, type LimitParams } from './algorithm';

/**
 * Token bucket: a bucket of `burst` tokens (default: `limit`) refilled at
 * `limit` tokens per `windowMs`; a call takes `cost` tokens or is refused.
 *
 * Promise: in any interval of length t, at most burst + limit × t / windowMs
 * units pass. Trade-off: allows a burst after a quiet spell and then a steady
 * rate, with two integers of state; says nothing about clock windows.
 *
 * Tokens are kept × windowMs (`scaledTokens`), so one ms of refill adds exactly
 * `limit` and every step is integer arithmetic: no floating drift, and the Lua
 * twin agrees bit for bit. A bucket holds scaledTokens / windowMs tokens;
 * `remaining` is the whole tokens (floor). It may go below 0 (a debt) after an
 * adjustment writes back units spent elsewhere; refill pays the debt first.
 *
 * A caller whose clock is behind `updatedAtMs` is answered at `updatedAtMs`:
 * no refill for time that, by the state, has not passed.
 *
 * resetAtMs: when the bucket is full again.
 */
export interface TokenBucketState {
  /** Tokens × windowMs at updatedAtMs; an integer, at most burst × windowMs, negative for a debt. */
  readonly scaledTokens: number;
  readonly updatedAtMs: number;
}

interface Level {
  readonly scaledTokens: number;
  readonly atMs: number;
}

/** The bucket at `atMs` (≥ state.updatedAtMs); an empty key is a full bucket. */
function levelAt(state: TokenBucketState | null, atMs: number, params: LimitParams): number {
  const capacity = burstOf(params) * params.windowMs;
  if (state === null || state.scaledTokens >= capacity) return capacity;
  const untilFullMs = Math.ceil((capacity - state.scaledTokens) / params.limit);
  const elapsedMs = atMs - state.updatedAtMs;
  return elapsedMs >= untilFullMs ? capacity : state.scaledTokens + elapsedMs * params.limit;
}

function current(state: TokenBucketState | null, nowMs: number, params: LimitParams): Level {
  const atMs = Math.max(nowMs, state?.updatedAtMs ?? 0);
  return { scaledTokens: levelAt(state, atMs, params), atMs };
}

/** When a bucket at `level` is full: the earliest ms whose refill covers what is missing. */
function fullAt(level: Level, params: LimitParams): number {
  const missing = burstOf(params) * params.windowMs - level.scaledTokens;
  return missing <= 0 ? level.atMs : level.atMs + Math.ceil(missing / params.limit);
}

function decide(state: TokenBucketState | null, nowMs: number, params: LimitParams, cost: number): AlgorithmResult<TokenBucketState> {
  const { windowMs } = params;
  const burst = burstOf(params);
  const level = current(state, nowMs, params);
  const needed = cost * windowMs;
  const allowed = cost === 0 || (cost <= burst && needed <= level.scaledTokens);
  const after: Level = allowed ? { scaledTokens: level.scaledTokens - needed, atMs: level.atMs } : level;
  const resetAtMs = fullAt(after, params);

  let retryAfterMs = 0;
  if (!allowed && cost > burst) retryAfterMs = unfitRetryAfterMs(resetAtMs, nowMs);
  else if (!allowed) retryAfterMs = level.atMs + Math.ceil((needed - level.scaledTokens) / params.limit) - nowMs;
  return {
    decision: {
      allowed,
      limit: burst,
      remaining: Math.max(0, Math.floor(after.scaledTokens / windowMs)),
      resetAtMs,
      retryAfterMs,
    },
    next: allowed && cost > 0 ? { scaledTokens: after.scaledTokens, updatedAtMs: after.atMs } : null,
  };
}

function adjust(state: TokenBucketState | null, nowMs: number, params: LimitParams, adjustment: Adjustment<TokenBucketState>): TokenBucketState | null {
  const { atLeast, deltaUnits } = adjustment;
  const atMs = Math.max(nowMs, state?.updatedAtMs ?? 0, atLeast?.updatedAtMs ?? 0);
  const own = levelAt(state, atMs, params);
  // The more spent is the emptier bucket; a refund never fills it past full.
  const merged = Math.min(own, levelAt(atLeast, atMs, params));
  const scaledTokens = Math.min(burstOf(params) * params.windowMs, merged - deltaUnits * params.windowMs);
  return scaledTokens === own ? null : { scaledTokens, updatedAtMs: atMs };
}

export const tokenBucket: Algorithm<TokenBucketState> = {
  name: 'token-bucket',
  decide,
  adjust,
  expiresAtMs: (state, params) => fullAt({ scaledTokens: state.scaledTokens, atMs: state.updatedAtMs }, params),
  maxCost: (params) => burstOf(params),
  describe: (params) => `bursts of up to ${burstOf(params)}, then one call every ${intervalWords(params.windowMs / params.limit)}`,
  parseState(value) {
    if (typeof value !== 'object' || value === null) return null;
    const { scaledTokens, updatedAtMs } = value as Record<string, unknown>;
    return isWholeNumber(scaledTokens, -Number.MAX_SAFE_INTEGER) && isWholeNumber(updatedAtMs) ? { scaledTokens, updatedAtMs } : null;
  },
};
