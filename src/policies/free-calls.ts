import { type CallTarget, isChatter } from '../library/mcp';

/** Tools that cost 0 unless configured otherwise: reading your own budget must not spend it. */
export const FREE_TOOLS: readonly string[] = ['rate_limit_status'];

/**
 * Free calls per token per minute by default: 600, five times the default
 * tier's 120, i.e. 200 handshakes a minute, far above any honest client's
 * reconnects, yet a flood of pings stops at 10 a second per token.
 */
export const FREE_PER_MINUTE_DEFAULT = 600;


/**
 * The built-in cost of a call nothing configured prices: 0 for chatter, the
 * free tools and a method this service does not serve (`servedMethods`
 * given and without it: the answer is -32601, no work), else 1. A cost of 0
 * still spends one of the free limit, so none of them is unbounded.
 */
export function defaultCostOf(target: CallTarget, servedMethods?: ReadonlySet<string>): number {
  if (isChatter(target)) return 0;
  if (servedMethods !== undefined && !servedMethods.has(target.method)) return 0;
  if (target.tool !== undefined && FREE_TOOLS.includes(target.tool)) return 0;
  return 1;
}
