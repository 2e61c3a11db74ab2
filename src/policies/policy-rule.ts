import type { PolicySet } from '../library';
import type { CallTarget } from '../library/mcp';

/** Which calls a rule applies to: every field given must match; none given matches every call. */
export interface RuleMatch {
  readonly method?: string;
  /** Implies method tools/call. */
  readonly tool?: string;
  readonly tier?: string;
  readonly tokenId?: string;
}

/**
 * A rule from the limits file: a cost and/or extra limits for the calls it
 * matches. Its limits count calls (one per matching message), per token and
 * rule, on top of the tier's; `shadow` ones are decided and reported, never
 * enforced.
 */
export interface PolicyRule {
  /** Unique; names the rule's state, its metrics label and its line on /developers. */
  readonly name: string;
  readonly match: RuleMatch;
  readonly cost?: number;
  readonly limits?: PolicySet;
  readonly shadow: boolean;
  /**
   * Whose calls the limits count: each caller's (default), or each client
   * address's, whoever signs in from it, so one address cannot farm many
   * identities past a figure (docs/adr/0055-per-address-rule-limits.md).
   */
  readonly per?: 'caller' | 'address';
}

/** The caller as rules see it. */
export interface Caller {
  readonly tokenId: string;
  /** The tier the token is counted under (after the fallback to the default tier). */
  readonly tier: string;
  /** The client address as the sign-in budget keys it (IPv6 per /64); undefined where no request is behind the call. */
  readonly address?: string;
}

export function ruleMatches(rule: PolicyRule, target: CallTarget, caller: Caller): boolean {
  const { match } = rule;
  if (match.tool !== undefined && (target.method !== 'tools/call' || target.tool !== match.tool)) return false;
  if (match.method !== undefined && !methodMatches(match.method, target.method)) return false;
  if (match.tier !== undefined && match.tier !== caller.tier) return false;
  if (match.tokenId !== undefined && match.tokenId !== caller.tokenId) return false;
  return true;
}

/** "notifications/*" matches every notification; any other pattern is the exact method. */
function methodMatches(pattern: string, method: string): boolean {
  return pattern.endsWith('/*') ? method.startsWith(pattern.slice(0, -1)) : pattern === method;
}
