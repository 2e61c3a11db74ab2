import { isLive, type OverrideIndex } from './limit-override';
import type { PolicyRule } from './policy-rule';
import type { Charge, ResolverConfig, Token } from './resolve-charges';
import { freeKeyOf, ruleScopeKeyOf, shadowKeyOf, tierKeyOf, toolKeyOf } from './scope-key';

/**
 * Every scope that can hold some call of this token, whatever it calls: what
 * rate_limit_status and /developers describe. The same rungs as
 * resolveCharges (override > rule > tier > fallback), with cost 0: a charge
 * that reads. Rules that match on method or tool are included with what they
 * match, since they hold only some calls.
 */
export function callerScopes(config: ResolverConfig, token: Token, overrides: OverrideIndex, nowMs: number): Charge[] {
  const configured = config.tiers.find((tier) => tier.name === token.tier);
  const tier = configured ?? config.defaultTier;
  const live = [...overrides.values()].filter((o) => isLive(o, nowMs));
  const tierOverride = live.find((o) => o.target.tool === undefined && o.target.tokenId === token.id) ?? live.find((o) => o.target.tool === undefined && o.target.tier === tier.name && o.target.tokenId === undefined);
  const scopes: Charge[] = [];
  const base = { cost: 0, tier: tier.name };
  if (tierOverride === undefined || tierOverride.shadow) {
    scopes.push({ ...base, key: tierKeyOf(token.id), scope: 'tier', policies: tier.policies, source: configured === undefined ? 'fallback' : 'tier', shadow: false });
  } else {
    scopes.push({ ...base, key: tierKeyOf(token.id), scope: 'tier', policies: tierOverride.policies, source: 'override', shadow: false });
  }
  if (tierOverride?.shadow === true) scopes.push({ ...base, key: shadowKeyOf(token.id, undefined), scope: 'tier', policies: tierOverride.policies, source: 'override', shadow: true });
  scopes.push({ ...base, key: freeKeyOf(token.id), scope: 'free', policies: config.policies.free, source: 'free', shadow: false });

  const toolOverrides = new Map<string, (typeof live)[number]>();
  for (const o of live) {
    const tool = o.target.tool;
    if (tool === undefined || !appliesTo(o.target, token.id, tier.name)) continue;
    const held = toolOverrides.get(tool);
    if (held === undefined || specificity(o.target) > specificity(held.target)) toolOverrides.set(tool, o);
  }
  for (const rule of config.policies.rules) {
    if (rule.limits === undefined || !callerMatches(rule, token.id, tier.name)) continue;
    const replaced = rule.match.tool !== undefined && toolOverrides.get(rule.match.tool)?.shadow === false;
    if (replaced) continue;
    scopes.push({
      ...base,
      key: ruleScopeKeyOf(rule, { tokenId: token.id, ...(token.address !== undefined ? { address: token.address } : {}) }),
      scope: 'rule',
      policies: rule.limits,
      source: 'rule',
      shadow: rule.shadow,
      ...(rule.match.tool !== undefined ? { tool: rule.match.tool } : {}),
      rule: rule.name,
    });
  }
  for (const [tool, o] of toolOverrides) {
    scopes.push({ ...base, key: o.shadow ? shadowKeyOf(token.id, tool) : toolKeyOf(token.id, tool), scope: 'tool', policies: o.policies, source: 'override', shadow: o.shadow, tool });
  }
  return scopes;
}

function callerMatches(rule: PolicyRule, tokenId: string, tier: string): boolean {
  return (rule.match.tier === undefined || rule.match.tier === tier) && (rule.match.tokenId === undefined || rule.match.tokenId === tokenId);
}

function appliesTo(target: { tokenId?: string; tier?: string }, tokenId: string, tier: string): boolean {
  if (target.tokenId !== undefined) return target.tokenId === tokenId;
  if (target.tier !== undefined) return target.tier === tier;
  return true;
}

function specificity(target: { tokenId?: string; tier?: string }): number {
  return target.tokenId !== undefined ? 2 : target.tier !== undefined ? 1 : 0;
}
