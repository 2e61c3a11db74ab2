import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Decision } from '../window/decision';
import type { PolicySet } from '../window/policy';
import type { RateLimiter } from '../limiter/rate-limiter';
import { writeJsonRefusal } from './refusal-body';
import { setRateLimitHeaders } from './rate-limit-headers';

/** How a refusal is written; the MCP route answers with a JSON-RPC error instead. */
export type RefusalWriter = (req: Request, res: Response, decision: Decision) => void;

export interface RateLimitMiddlewareOptions {
  readonly limiter: RateLimiter;
  /** The key to count against, e.g. the token id. Never a secret. */
  readonly key: (req: Request, res: Response) => string;
  /** Default: the limiter's policies. A token's tier picks its own here. */
  readonly policies?: (req: Request, res: Response) => PolicySet;
  /** Default 1. */
  readonly cost?: (req: Request, res: Response) => number;
  /** Default: `writeJsonRefusal`. */
  readonly refuse?: RefusalWriter;
  /** Injected time for the headers' relative seconds; default Date.now. */
  readonly clock?: () => number;
}

/**
 * Counts each request against its key and sets the rate-limit headers on
 * every response, allowed or not. A refusal ends the request with 429 (or 503
 * when a fail-closed backend is down); an allowed request continues with the
 * decision in `res.locals.rateLimit`.
 */
export function createRateLimitMiddleware(options: RateLimitMiddlewareOptions): RequestHandler {
  const refuse = options.refuse ?? writeJsonRefusal;
  const clock = options.clock ?? Date.now;
  const answer = (req: Request, res: Response, next: NextFunction, decision: Decision): void => {
    res.locals.rateLimit = decision;
    setRateLimitHeaders(res, decision, clock());
    if (decision.allowed) next();
    else refuse(req, res, decision);
  };
  // A plain function with then(), not an async one: Express 5 would wrap an
  // async middleware's promise too, and this runs on every request.
  return function rateLimit(req: Request, res: Response, next: NextFunction): void {
    let pending: Promise<Decision>;
    try {
      const { limiter } = options;
      const key = options.key(req, res);
      const consumeOptions = { policies: options.policies?.(req, res), cost: options.cost?.(req, res) };
      // A decision made without I/O (the memory store, a cached refusal) is answered in this turn: no promise, no microtask.
      const decided = limiter.consumeSync?.(key, consumeOptions);
      if (decided !== undefined) {
        answer(req, res, next, decided);
        return;
      }
      pending = limiter.consume(key, consumeOptions);
    } catch (error) {
      next(error);
      return;
    }
    pending.then((decision) => answer(req, res, next, decision)).catch(next);
  };
}
