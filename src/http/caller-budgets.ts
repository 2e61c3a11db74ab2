import type { Response } from 'express';
import type { Decision, RateLimiter } from '../library';
import { callerScopes } from '../policies/caller-scopes';
import type { OverrideIndex } from '../policies/limit-override';
import type { Charge, ResolverConfig } from '../policies/resolve-charges';
import { chargedDecisionsOf, tokenOf, waitBudgetOf } from './request-locals';

/** One scope that holds the caller, and what is left in it. */
export interface ScopeBudget {
  readonly scope: Charge;
  readonly decision: Decision;
}

export interface BudgetReaderOptions {
  readonly limiter: RateLimiter;
  readonly resolver: ResolverConfig;
  readonly overrides: () => OverrideIndex;
  readonly clock: () => number;
  /** The request's client address as per-address rules key it; default none ("unknown"). */
  readonly addressOf?: (res: Response) => string;
}

/**
 * The caller's budget in every scope that can hold it, as of this request:
 * a scope this request was charged on reports that decision (this call
 * included); any other is read at cost 0 (one parallel round trip each),
 * which spends nothing.
 */
export function createBudgetReader(options: BudgetReaderOptions): (res: Response) => Promise<ScopeBudget[]> {
  return async (res) => {
    const token = tokenOf(res);
    if (token === undefined) throw new Error('budgets read without an authenticated token');
    const charged = chargedDecisionsOf(res) ?? new Map<string, Decision>();
    const address = options.addressOf?.(res);
    const scopes = callerScopes(options.resolver, address === undefined ? token : { ...token, address }, options.overrides(), options.clock());
    return Promise.all(
      scopes.map(async (scope) => ({
        scope,
        decision: charged.get(scope.key) ?? (await options.limiter.consume(scope.key, { policies: scope.policies, cost: 0, budget: waitBudgetOf(res) })),
      })),
    );
  };
}
