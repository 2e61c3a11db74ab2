import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { RateLimiter } from '../limiter/rate-limiter';
import { tokenOf } from './request-locals';
import { spentBudgetRefusal, writeBudgetRefusal } from './budget-refusal';
import { decisionOf } from './request-locals';

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
 * auth; a request the limiter decided on is never counted here.
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
        res.once('finish', () => {
          if (!REFUSAL_STATUSES.has(res.statusCode) || decisionOf(res) !== undefined) return;
          // Memory limiter: cannot fail on I/O; a thrown validation error has nowhere better to go.
          limiter.consume(token.id).catch(() => undefined);
        });
        next();
      })
      .catch(next);
  };
}
