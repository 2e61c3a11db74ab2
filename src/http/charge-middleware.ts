import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { combineDecisions, type Decision, type RateLimiter, type WaitBudget } from '../library';
import { type RefusalWriter, requestIdOf, setRateLimitHeaders, writeJsonRefusal } from '../library/express';
import type { ChargeEvents } from '../policies/charge-events';
import type { Charge, ChargePlan } from '../policies/resolve-charges';
import type { Logger } from '../shared/logger';
import { costProblem } from './cost-check';
import { setChargedDecisions, setDecision, waitBudgetOf } from './request-locals';

export interface ChargeMiddlewareOptions {
  readonly limiter: RateLimiter;
  /** The request's charges (src/policies/resolve-charges.ts), from its body, token and the live overrides. */
  readonly plan: (req: Request, res: Response) => ChargePlan;
  readonly logger: Logger;
  readonly events?: ChargeEvents;
  /** Default: `writeJsonRefusal`. */
  readonly refuse?: RefusalWriter;
  /** Injected time for the headers' relative seconds; default Date.now. */
  readonly clock?: () => number;
}

/**
 * Charges a request on every key its plan names, all or nothing: the
 * charges run in parallel and, if any enforced one refuses, every charge that
 * was allowed is refunded, so a refused request has spent nothing
 * (docs/adr/0027-call-costs-rules-and-scopes.md). Shadow charges never
 * refuse; a refusal of theirs on a call that went ahead is reported.
 * A cost no enforced set can ever hold is 413 before anything is charged.
 * Headers describe every enforced policy, the binding one on top.
 */
export function createChargeMiddleware(options: ChargeMiddlewareOptions): RequestHandler {
  const refuse = options.refuse ?? writeJsonRefusal;
  const clock = options.clock ?? Date.now;
  return function charge(req: Request, res: Response, next: NextFunction): void {
    let plan: ChargePlan;
    try {
      plan = options.plan(req, res);
    } catch (error) {
      next(error);
      return;
    }
    for (const item of plan.charges) {
      if (item.shadow) continue;
      const problem = costProblem(item.cost, item.policies, requestIdOf(req.body));
      if (problem !== undefined) {
        res.status(problem.status).json(problem.body);
        return;
      }
    }
    chargeAll(options, plan, waitBudgetOf(res))
      .then(({ decision, byKey }) => {
        setChargedDecisions(res, byKey);
        setDecision(res, decision);
        setRateLimitHeaders(res, decision, clock());
        if (decision.allowed) next();
        else refuse(req, res, decision);
      })
      .catch(next);
  };
}

async function chargeAll(options: ChargeMiddlewareOptions, plan: ChargePlan, budget: WaitBudget | undefined): Promise<{ decision: Decision; byKey: Map<string, Decision> }> {
  const { limiter } = options;
  const { charges } = plan;
  // One charge is the usual call (its tier alone): awaited as it is, without Promise.all's promise and closures.
  const decisions =
    charges.length === 1
      ? [await consumeFor(limiter, charges[0] as Charge, budget)]
      : await Promise.all(charges.map((item) => consumeFor(limiter, item, budget)));
  const enforced: Decision[] = [];
  let allowed = true;
  plan.charges.forEach((item, i) => {
    const decision = decisions[i] as Decision;
    options.events?.recordCharge(item, decision);
    if (item.shadow) return;
    enforced.push(decision);
    if (!decision.allowed) allowed = false;
  });
  if (!allowed) {
    // Nothing of a refused request stays spent: give back what each allowed charge took, shadows included.
    await Promise.all(plan.charges.map((item, i) => refundIfSpent(limiter, item, decisions[i] as Decision)));
  } else {
    plan.charges.forEach((item, i) => {
      const decision = decisions[i] as Decision;
      if (item.shadow && !decision.allowed) reportShadowRefusal(options, plan, item, decision);
    });
  }
  const byKey = new Map(plan.charges.map((item, i) => [item.key, decisions[i] as Decision]));
  return { decision: combineDecisions(enforced as [Decision, ...Decision[]]), byKey };
}

function consumeFor(limiter: RateLimiter, item: Charge, budget: WaitBudget | undefined): Promise<Decision> {
  return limiter.consume(item.key, { policies: item.policies, cost: item.cost, budget });
}

async function refundIfSpent(limiter: RateLimiter, item: Charge, decision: Decision): Promise<void> {
  if (!decision.allowed) return;
  // Not bounded by the request's wait budget: a refund dropped for lack of it would charge a refused request.
  await limiter.refund(item.key, decision, { policies: item.policies, cost: item.cost });
}

function reportShadowRefusal(options: ChargeMiddlewareOptions, plan: ChargePlan, item: Charge, decision: Decision): void {
  options.events?.recordShadowRefusal(item, decision);
  options.logger.warn('a shadow limit would have refused this call; it was allowed', {
    event: 'ratelimit.shadow_refusal',
    // The public id, never the secret.
    tokenId: plan.tokenId,
    scope: item.scope,
    source: item.source,
    tier: item.tier,
    ...(item.tool !== undefined ? { tool: item.tool } : {}),
    ...(item.rule !== undefined ? { rule: item.rule } : {}),
    policy: decision.policyName,
    limit: decision.limit,
    windowMs: decision.windowMs,
    cost: item.cost,
    retryAfterMs: decision.retryAfterMs,
  });
}
