import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Decision, RateLimiter } from '../library';
import { tokenOf } from './request-locals';
import { spentBudgetRefusal, writeBudgetRefusal } from './budget-refusal';
import { decisionOf } from './request-locals';
import { setRateLimitHeaders } from '../library/express';
import { onResponseHead, type HeadHook } from './response-head-hook';

/** What the body and protocol checks answer with when they refuse a request before the limiter. */
const REFUSAL_STATUSES: ReadonlySet<number> = new Set([400, 406, 408, 413, 415]);

export interface RefusedRequestBudgetOptions {
  /** A memory limiter (`config.rateLimit.refusedRequests`), keyed by token id; local, like the unauthenticated budget. */
  readonly limiter: RateLimiter;
  /** Injected time for the headers' relative seconds; default Date.now. */
  readonly clock?: () => number;
}

/**
 * Requests refused before the per-token limiter (malformed, oversized, too
 * deep, unsupported protocol) are never charged to the token's published
 * limit: they did no work. But each still costs a read and a scan, so a token
 * holder could send them without end. This budget counts them per token on
 * this instance, and once it is spent refuses the token's next requests (429)
 * before their body is read, until the window passes. Mounted right after
 * auth; a request the limiter decided on is never counted here. A refusal it
 * counts carries this budget's rate-limit headers (`"refused-requests"`),
 * the only limit that answer is held to. The app must have installHeadHooks.
 */
export function createRefusedRequestBudget(options: RefusedRequestBudgetOptions): RequestHandler {
  const { limiter } = options;
  const clock = options.clock ?? Date.now;
  return function refusedRequestBudget(_req: Request, res: Response, next: NextFunction): void {
    const token = tokenOf(res);
    if (token === undefined) {
      next(new Error('refused-request budget reached without res.locals.token: mount it after auth'));
      return;
    }
    limiter
      .consume(token.id, { cost: 0 })
      .then((budget) => {
        if (budget.remaining === 0) {
          writeBudgetRefusal(res, null, spentBudgetRefusal(budget, clock()), clock(), { reason: 'refused_requests', tooMany: 'malformed, oversized or unsupported requests with this token' });
          return;
        }
        onResponseHead(res, new RefusalWatch(budget, clock, limiter, token.id));
        next();
      })
      .catch(next);
  };
}

/** A budget read at cost 0, with this request's unit taken. */
function countedOnce(budget: Decision): Decision {
  const remaining = Math.max(0, budget.remaining - 1);
  return { ...budget, remaining, policies: budget.policies.map((policy) => ({ ...policy, remaining: Math.max(0, policy.remaining - 1) })) };
}

/**
 * One request's watch: when its head is written, a counted refusal gets this
 * budget's headers (as the budget stands once it is counted) and takes its
 * unit. Counted at the head, not at 'finish': the answer is decided then, and
 * a listener per request was part of what this budget cost every call.
 */
class RefusalWatch implements HeadHook {
  constructor(
    private readonly budget: Decision,
    private readonly clock: () => number,
    private readonly limiter: RateLimiter,
    private readonly tokenId: string,
  ) {}

  beforeHead(res: Response): void {
    if (!REFUSAL_STATUSES.has(res.statusCode) || decisionOf(res) !== undefined) return;
    setRateLimitHeaders(res, countedOnce(this.budget), this.clock());
    // Memory limiter: cannot fail on I/O; a thrown validation error has nowhere better to go.
    this.limiter.consume(this.tokenId).catch(() => undefined);
  }
}
