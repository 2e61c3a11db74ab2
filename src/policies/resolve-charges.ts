import type { PolicySet } from '../library';
import type { CallTarget } from '../library/mcp';
import { defaultCostOf } from './free-calls';
import { overrideFor, type LimitOverride, type OverrideIndex } from './limit-override';
import { ruleMatches, type Caller, type PolicyRule } from './policy-rule';
import { freeKeyOf, ruleScopeKeyOf, shadowKeyOf, tierKeyOf, toolKeyOf } from './scope-key';

/** A tier as the resolver needs it (config/tier.ts has the same shape). */
export interface PolicyTier {
  readonly name: string;
  readonly policies: PolicySet;
}

/** Everything configured about what calls cost and which extra limits hold them. */
export interface PoliciesConfig {
  /** Per tool (RATE_LIMIT_TOOL_COSTS and the limits file's `costs`). */
  readonly costs: ReadonlyMap<string, number>;
  /** In file order: the first matching rule that gives a cost prices a call. */
  readonly rules: readonly PolicyRule[];
  /** The per-token limit on free calls (chatter, free tools): counted one per message. */
  readonly free: PolicySet;
}

export interface ResolverConfig {
  readonly tiers: readonly PolicyTier[];
  /** The fallback: the tier of a token whose tier is not configured. Every call ends with at least this. */
  readonly defaultTier: PolicyTier;
  readonly policies: PoliciesConfig;
  /** The tools served: only these names become a tier or free charge's tool label (metrics). Default: none. */
  readonly tools?: ReadonlySet<string>;
  /**
   * The JSON-RPC methods the MCP server answers (from its capabilities); a
   * call of any other is answered -32601 and costs 0 by default. Default:
   * unknown, every method priced as served.
   */
  readonly servedMethods?: ReadonlySet<string>;
}

/** The tool label of a charge that several tools' calls went into (a batch). */
export const SEVERAL_TOOLS = '(several)';

/** Which rung of the resolution order gave an answer. */
export type Source = 'override' | 'rule' | 'tier' | 'costs' | 'fallback' | 'free';

/** Which state a charge spends. */
export type Scope = 'tier' | 'free' | 'rule' | 'tool';

/** One limiter call of a request: a key, the set held there and the units it spends. */
export interface Charge {
  readonly key: string;
  readonly scope: Scope;
  readonly policies: PolicySet;
  readonly cost: number;
  /** What chose `policies`. */
  readonly source: Source;
  /** Decided and reported, never enforced. */
  readonly shadow: boolean;
  /** Names from the configuration only, for metrics and logs. */
  readonly tier: string;
  readonly tool?: string;
  readonly rule?: string;
}

/** What one message costs and why. */
export interface MessagePrice {
  readonly target: CallTarget;
  readonly cost: number;
  readonly costSource: Source;
  /** The rule that priced it, when one did. */
  readonly rule?: string;
}

export interface ChargePlan {
  /** The caller's public id (never a secret). */
  readonly tokenId: string;
  /** Each key once; a batch's messages on the same key add up. Never empty. */
  readonly charges: readonly Charge[];
  readonly messages: readonly MessagePrice[];
  /** The tier the caller is counted under and whether that came from the fallback. */
  readonly tier: PolicyTier;
  readonly tierSource: 'tier' | 'fallback';
}

export interface Token {
  readonly id: string;
  readonly tier: string;
  /** The client address as the sign-in budget keys it, for per-address rules; default "unknown". */
  readonly address?: string;
}

/**
 * Prices a request and says which limits hold it, pure. Each quantity comes
 * from the first rung that has an answer:
 *
 * - a call's cost: a rule that gives one > the tool's configured cost >
 *   the built-in default (0 for chatter and rate_limit_status, else 1);
 * - the token's own limits: an override for the token > one for its tier >
 *   the tier's limits > the default tier (a tier not configured);
 * - a tool's extra limits: an override naming the tool (token, tier, every
 *   token) > the rules naming the tool.
 *
 * A call that costs 0 spends 1 of the free limit instead of the tier's.
 * Rules' limits count calls per token and rule. A batch's messages on one key
 * add up, so a batch costs the sum of its messages.
 */
export function resolveCharges(config: ResolverConfig, calls: readonly CallTarget[], token: Token, overrides: OverrideIndex, nowMs: number): ChargePlan {
  const configured = config.tiers.find((tier) => tier.name === token.tier);
  const tier = configured ?? config.defaultTier;
  const tierSource = configured === undefined ? 'fallback' : 'tier';
  const caller: Caller = { tokenId: token.id, tier: tier.name, ...(token.address !== undefined ? { address: token.address } : {}) };
  const charges = new Map<string, Charge>();

  const messages: MessagePrice[] = [];
  for (const target of calls) {
    const price = priceOf(config.policies, target, caller, config.servedMethods);
    messages.push(price);
    const known = target.tool !== undefined && config.tools?.has(target.tool) === true ? { tool: target.tool } : {};
    if (price.cost === 0) {
      addCharge(charges, { key: freeKeyOf(token.id), scope: 'free', policies: config.policies.free, cost: 1, source: 'free', shadow: false, tier: tier.name, ...known });
    } else {
      const override = overrideFor(overrides, token.id, tier.name, undefined, nowMs);
      if (override === undefined || override.shadow) {
        addCharge(charges, { key: tierKeyOf(token.id), scope: 'tier', policies: tier.policies, cost: price.cost, source: tierSource, shadow: false, tier: tier.name, ...known });
      } else {
        addCharge(charges, { key: tierKeyOf(token.id), scope: 'tier', policies: override.policies, cost: price.cost, source: 'override', shadow: false, tier: tier.name, ...known });
      }
      if (override?.shadow === true) {
        addCharge(charges, { key: shadowKeyOf(token.id, undefined), scope: 'tier', policies: override.policies, cost: price.cost, source: 'override', shadow: true, tier: tier.name, ...known });
      }
    }
    for (const charge of extraCharges(config.policies, target, caller, overrides, nowMs)) addCharge(charges, charge);
  }
  return { tokenId: token.id, charges: [...charges.values()], messages, tier, tierSource };
}

function priceOf(policies: PoliciesConfig, target: CallTarget, caller: Caller, servedMethods: ReadonlySet<string> | undefined): MessagePrice {
  for (const rule of policies.rules) {
    if (rule.cost !== undefined && ruleMatches(rule, target, caller)) return { target, cost: rule.cost, costSource: 'rule', rule: rule.name };
  }
  const configured = target.tool === undefined ? undefined : policies.costs.get(target.tool);
  if (configured !== undefined) return { target, cost: configured, costSource: 'costs' };
  return { target, cost: defaultCostOf(target, servedMethods), costSource: 'fallback' };
}

/** The rules' limits and the tool's override, one call each. */
function extraCharges(policies: PoliciesConfig, target: CallTarget, caller: Caller, overrides: OverrideIndex, nowMs: number): Charge[] {
  const out: Charge[] = [];
  const { tool } = target;
  const toolOverride: LimitOverride | undefined = tool === undefined ? undefined : overrideFor(overrides, caller.tokenId, caller.tier, tool, nowMs);
  const replacesRules = toolOverride !== undefined && !toolOverride.shadow;
  for (const rule of policies.rules) {
    if (rule.limits === undefined || !ruleMatches(rule, target, caller)) continue;
    // An override for a tool stands in for the rules that name that tool, not for broader ones.
    if (replacesRules && rule.match.tool !== undefined) continue;
    out.push({
      key: ruleScopeKeyOf(rule, caller),
      scope: 'rule',
      policies: rule.limits,
      cost: 1,
      source: 'rule',
      shadow: rule.shadow,
      tier: caller.tier,
      // The tool label only when the rule names it: a broader rule's tool is the client's word, not config.
      ...(rule.match.tool !== undefined ? { tool: rule.match.tool } : {}),
      rule: rule.name,
    });
  }
  if (toolOverride !== undefined && tool !== undefined) {
    out.push({
      key: toolOverride.shadow ? shadowKeyOf(caller.tokenId, tool) : toolKeyOf(caller.tokenId, tool),
      scope: 'tool',
      policies: toolOverride.policies,
      cost: 1,
      source: 'override',
      shadow: toolOverride.shadow,
      tier: caller.tier,
      tool,
    });
  }
  return out;
}

/** A module function, not a closure per call: under tsx every named closure built per request also costs a defineProperty. */
function addCharge(charges: Map<string, Charge>, charge: Charge): void {
  const held = charges.get(charge.key);
  // One key is always one scope of one token, so it holds the same set for every message.
  if (held === undefined) charges.set(charge.key, charge);
  else charges.set(charge.key, { ...held, cost: held.cost + charge.cost, ...(held.tool === charge.tool ? {} : { tool: SEVERAL_TOOLS }) });
}
