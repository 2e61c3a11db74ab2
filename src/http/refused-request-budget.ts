import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Decision, RateLimiter } from '../library';
import { tokenOf } from './request-locals';
import { spentBudgetRefusal, writeBudgetRefusal } from './budget-refusal';
import { decisionOf } from './request-locals';
import { setRateLimitHeaders } from '../library/express';

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
 * the only limit that answer is held to.
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
        watchForRefusal(res, { budget, clock, limiter, tokenId: token.id, writeHead: res.writeHead });
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

/** What a request's answer needs to count itself as a refusal: the budget as read, and the original writeHead. */
interface RefusalWatch {
  readonly budget: Decision;
  readonly clock: () => number;
  readonly limiter: RateLimiter;
  readonly tokenId: string;
  readonly writeHead: Response['writeHead'];
  headersWritten?: true;
}

/** Where a response keeps its watch: one property, so the hooks below are shared functions, not closures built per request. */
const WATCH = Symbol('refusedRequestWatch');
type WatchedResponse = Response & { [WATCH]?: RefusalWatch };

/**
 * Just before the status line and headers are written, whoever writes them
 * (res.json, res.end, a stream: Node's implicit header goes through
 * writeHead too), a counted refusal gets this budget's headers; once the
 * answer is sent, it takes its unit.
 */
function watchForRefusal(res: Response, watch: RefusalWatch): void {
  (res as WatchedResponse)[WATCH] = watch;
  res.writeHead = writeHeadWatched as Response['writeHead'];
  res.once('finish', countOnFinish);
}

function isCountedRefusal(res: Response): boolean {
  return REFUSAL_STATUSES.has(res.statusCode) && decisionOf(res) === undefined;
}

function writeHeadWatched(this: WatchedResponse, ...args: Parameters<Response['writeHead']>): Response {
  const watch = this[WATCH] as RefusalWatch;
  if (watch.headersWritten === undefined) {
    watch.headersWritten = true;
    if (typeof args[0] === 'number') this.statusCode = args[0];
    // The budget that governs this answer, as it stands once this refusal is counted.
    if (isCountedRefusal(this)) setRateLimitHeaders(this, countedOnce(watch.budget), watch.clock());
  }
  return watch.writeHead.apply(this, args);
}

function countOnFinish(this: WatchedResponse): void {
  const watch = this[WATCH] as RefusalWatch;
  if (!isCountedRefusal(this)) return;
  // Memory limiter: cannot fail on I/O; a thrown validation error has nowhere better to go.
  watch.limiter.consume(watch.tokenId).catch(() => undefined);
}
