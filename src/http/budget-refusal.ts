import type { Response } from 'express';
import type { Decision } from '../library';
import { eraOfHeaders, jsonRpcError, type JsonRpcId, refusalCode, secondsUntil, sendJsonRpcError, setRateLimitHeaders } from '../library/express';

/**
 * A cost-0 read that found a budget spent, as the refusal it means: a read
 * never refuses by itself, so the caller turns "none left" into "refused
 * until the window resets".
 */
export function spentBudgetRefusal(budget: Decision, nowMs: number): Decision {
  return { ...budget, allowed: false, reason: 'limit', retryAfterMs: Math.max(0, budget.resetAtMs - nowMs) };
}

/**
 * A 429 from one of the guard budgets in front of the published limit (failed
 * sign-ins, requests without a token, refused requests): that budget's own
 * rate-limit headers, Retry-After, and a JSON-RPC error whose `data.reason`
 * names the budget, so a client can tell it from the token's own limit. The
 * body is not read yet, so the code's era comes from the headers.
 */
export function writeBudgetRefusal(res: Response, id: JsonRpcId, decision: Decision, nowMs: number, refusal: { readonly reason: string; readonly tooMany: string }): void {
  setRateLimitHeaders(res, decision, nowMs);
  const retryAfterSeconds = secondsUntil(decision.retryAfterMs);
  sendJsonRpcError(
    res,
    429,
    jsonRpcError(id, refusalCode(eraOfHeaders(res.req.headers), 'rate_limited'), `Too many ${refusal.tooMany}. Retry after ${retryAfterSeconds} s.`, {
      reason: refusal.reason,
      retryAfterSeconds,
      resetAt: new Date(decision.resetAtMs).toISOString(),
      limit: decision.limit,
      windowSeconds: Math.round(decision.windowMs / 1000),
    }),
  );
}
