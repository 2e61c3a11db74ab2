import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { RateLimitPolicy } from '../limiter/policy';
import { JsonRpcCode, jsonRpcError, requestIdOf, type JsonRpcErrorBody } from './json-rpc-error';

export interface CostProblem {
  /**
   * 413 Content Too Large, not 429: no wait makes the call fit, so "retry
   * after" would be a lie; and not a bare 400: the request is well formed, it
   * is too large for this token, and 413 tells a client not to resend it as is.
   */
  readonly status: 413;
  readonly body: JsonRpcErrorBody;
}

/**
 * A call that costs more than any window of its policy can hold (cost >
 * limit) can never be allowed, so it is refused before the limiter, charged
 * nothing, with the figures the client needs to split it.
 */
export function costProblem(cost: number, policy: RateLimitPolicy, id: JsonRpcErrorBody['id'] = null): CostProblem | undefined {
  if (cost <= policy.limit) return undefined;
  const windowSeconds = Math.round(policy.windowMs / 1000);
  return {
    status: 413,
    body: jsonRpcError(
      id,
      JsonRpcCode.PayloadTooLarge,
      `This batch costs ${cost} units; your limit is ${policy.limit} per ${windowSeconds} s, so it can never be allowed. Split it into batches of at most ${policy.limit} messages.`,
      { reason: 'cost_exceeds_limit', cost, limit: policy.limit, windowSeconds, policy: policy.name },
    ),
  };
}

export interface CostCheckOptions {
  /** The same cost the limiter will charge. */
  readonly cost: (req: Request, res: Response) => number;
  /** The same policy the limiter will charge against. */
  readonly policy: (req: Request, res: Response) => RateLimitPolicy;
}

/** Express adapter, mounted right before the per-token limiter. */
export function createCostCheck(options: CostCheckOptions): RequestHandler {
  return function costCheck(req: Request, res: Response, next: NextFunction): void {
    const problem = costProblem(options.cost(req, res), options.policy(req, res), requestIdOf(req.body));
    if (problem === undefined) {
      next();
      return;
    }
    res.status(problem.status).json(problem.body);
  };
}
