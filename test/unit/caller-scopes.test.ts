import fc from 'fast-check';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import type { CallTarget } from '../../src/library/mcp/call-target';
import { callerScopes } from '../../src/policies/caller-scopes';
import { overrideIdOf, NO_OVERRIDES, type LimitOverride, type OverrideIndex, type OverrideTarget } from '../../src/policies/limit-override';
import type { PolicyRule } from '../../src/policies/policy-rule';
import { resolveCharges, type Charge, type ResolverConfig } from '../../src/policies/resolve-charges';
import { freeKeyOf, ruleKeyOf, shadowKeyOf, tierKeyOf, toolKeyOf } from '../../src/policies/scope-key';

const NOW = 1_700_000_000_000;
const MINUTE = 60_000;
const set = (...policies: RateLimitPolicy[]): PolicySet => policies as unknown as PolicySet;
const DEFAULT_SET = set({ name: 'default', limit: 120, windowMs: MINUTE });
const PRO_SET = set({ name: 'pro', limit: 600, windowMs: MINUTE });
const FREE_SET = set({ name: 'free', limit: 300, windowMs: MINUTE });
const SEARCH_LIMIT = set({ name: 'search-per-minute', limit: 10, windowMs: MINUTE });
const WRITE_LIMIT = set({ name: 'writes-per-minute', limit: 5, windowMs: MINUTE });

function config(rules: PolicyRule[] = []): ResolverConfig {
  return {
    tiers: [
      { name: 'default', policies: DEFAULT_SET },
      { name: 'pro', policies: PRO_SET },
    ],
    defaultTier: { name: 'default', policies: DEFAULT_SET },
    policies: { costs: new Map(), rules, free: FREE_SET },
  };
}

interface OverrideSpec {
  target: OverrideTarget;
  limit: number;
  shadow?: boolean;
  expiresAtMs?: number | null;
}

function overrideOf(o: OverrideSpec): LimitOverride {
  return {
    target: o.target,
    policies: set({ name: `override-${overrideIdOf(o.target)}`, limit: o.limit, windowMs: MINUTE }),
    shadow: o.shadow ?? false,
    setAtMs: NOW - 1000,
    expiresAtMs: o.expiresAtMs ?? null,
  };
}

function overrides(...list: OverrideSpec[]): OverrideIndex {
  return new Map(list.map((o): [string, LimitOverride] => [overrideIdOf(o.target), overrideOf(o)]));
}

const pro = { id: 'tok_pro', tier: 'pro' };
const plain = { id: 'tok_plain', tier: 'default' };
const searchRule: PolicyRule = { name: 'search', match: { tool: 'search' }, limits: SEARCH_LIMIT, shadow: false };

const byScope = (scopes: readonly Charge[], scope: Charge['scope']): Charge[] => scopes.filter((s) => s.scope === scope);
const keys = (scopes: readonly Charge[]): string[] => scopes.map((s) => s.key);

describe('callerScopes: the tier and free scopes every token has', () => {
  test('a token of a configured tier has its tier scope and its free scope, nothing else', () => {
    expect(callerScopes(config(), pro, NO_OVERRIDES, NOW)).toEqual([
      { key: tierKeyOf('tok_pro'), scope: 'tier', policies: PRO_SET, source: 'tier', shadow: false, cost: 0, tier: 'pro' },
      { key: freeKeyOf('tok_pro'), scope: 'free', policies: FREE_SET, source: 'free', shadow: false, cost: 0, tier: 'pro' },
    ]);
  });

  test('a token of a tier not configured is described under the default tier, from the fallback', () => {
    const scopes = callerScopes(config(), { id: 'tok_x', tier: 'gold' }, NO_OVERRIDES, NOW);
    expect(scopes[0]).toEqual({ key: tierKeyOf('tok_x'), scope: 'tier', policies: DEFAULT_SET, source: 'fallback', shadow: false, cost: 0, tier: 'default' });
    expect(scopes.every((s) => s.tier === 'default')).toBe(true);
  });

  test('a token of the default tier named in the tier list is from its tier, not the fallback', () => {
    expect(callerScopes(config(), plain, NO_OVERRIDES, NOW)[0]?.source).toBe('tier');
  });
});

describe('callerScopes: overrides of the tier limits (token > tier)', () => {
  test.each<[string, OverrideSpec[], number | undefined]>([
    ['an override for the token replaces its tier limits', [{ target: { tokenId: 'tok_pro' }, limit: 7 }], 7],
    ['an override for its tier replaces its tier limits', [{ target: { tier: 'pro' }, limit: 8 }], 8],
    ['the token override wins over its tier override', [{ target: { tier: 'pro' }, limit: 8 }, { target: { tokenId: 'tok_pro' }, limit: 7 }], 7],
    ['the token override wins over its tier override whichever was set first', [{ target: { tokenId: 'tok_pro' }, limit: 7 }, { target: { tier: 'pro' }, limit: 8 }], 7],
    ['an override for another token does not apply', [{ target: { tokenId: 'tok_other' }, limit: 7 }], undefined],
    ['an override for another tier does not apply', [{ target: { tier: 'default' }, limit: 8 }], undefined],
    ['an override naming a tool is not a tier override', [{ target: { tokenId: 'tok_pro', tool: 'search' }, limit: 9 }], undefined],
    ['a tier-and-tool override is not a tier override', [{ target: { tier: 'pro', tool: 'search' }, limit: 9 }], undefined],
    ['an expired override does not apply', [{ target: { tokenId: 'tok_pro' }, limit: 7, expiresAtMs: NOW }], undefined],
    ['an expired token override leaves the tier override', [{ target: { tokenId: 'tok_pro' }, limit: 7, expiresAtMs: NOW - 1 }, { target: { tier: 'pro' }, limit: 8 }], 8],
    ['an override expiring after now applies', [{ target: { tokenId: 'tok_pro' }, limit: 7, expiresAtMs: NOW + 1 }], 7],
  ])('%s', (_name, list, limit) => {
    const tiers = byScope(callerScopes(config(), pro, overrides(...list), NOW), 'tier');
    expect(tiers).toHaveLength(1);
    const [tier] = tiers as [Charge];
    expect(tier.key).toBe(tierKeyOf('tok_pro'));
    expect(tier.shadow).toBe(false);
    if (limit === undefined) {
      expect(tier).toMatchObject({ policies: PRO_SET, source: 'tier' });
    } else {
      expect(tier.source).toBe('override');
      expect(tier.policies[0]?.limit).toBe(limit);
    }
  });

  test('an override of a token whose tier is not configured applies to the default tier it falls back to', () => {
    const scopes = callerScopes(config(), { id: 'tok_x', tier: 'gold' }, overrides({ target: { tier: 'default' }, limit: 8 }), NOW);
    expect(scopes[0]).toMatchObject({ source: 'override', tier: 'default' });
    expect(scopes[0]?.policies[0]?.limit).toBe(8);
  });

  test('a shadow override keeps the tier limits and adds its own shadow scope on its own key', () => {
    const scopes = callerScopes(config(), pro, overrides({ target: { tokenId: 'tok_pro' }, limit: 7, shadow: true }), NOW);
    const tiers = byScope(scopes, 'tier');
    expect(tiers).toHaveLength(2);
    expect(tiers[0]).toEqual({ key: tierKeyOf('tok_pro'), scope: 'tier', policies: PRO_SET, source: 'tier', shadow: false, cost: 0, tier: 'pro' });
    expect(tiers[1]).toMatchObject({ key: shadowKeyOf('tok_pro', undefined), scope: 'tier', source: 'override', shadow: true, cost: 0, tier: 'pro' });
    expect(tiers[1]?.policies[0]?.limit).toBe(7);
  });

  test('a shadow override of a tier not configured keeps the fallback source on the tier scope', () => {
    const scopes = callerScopes(config(), { id: 'tok_x', tier: 'gold' }, overrides({ target: { tokenId: 'tok_x' }, limit: 7, shadow: true }), NOW);
    expect(scopes[0]).toMatchObject({ source: 'fallback', policies: DEFAULT_SET, shadow: false });
  });

  test('an enforced override adds no shadow scope', () => {
    const scopes = callerScopes(config(), pro, overrides({ target: { tokenId: 'tok_pro' }, limit: 7 }), NOW);
    expect(keys(scopes)).toEqual([tierKeyOf('tok_pro'), freeKeyOf('tok_pro')]);
  });
});

describe('callerScopes: rules with limits', () => {
  test('a rule with limits is a scope of its own, labelled with the tool it names', () => {
    const scopes = callerScopes(config([searchRule]), pro, NO_OVERRIDES, NOW);
    expect(byScope(scopes, 'rule')).toEqual([
      { key: ruleKeyOf('tok_pro', 'search'), scope: 'rule', policies: SEARCH_LIMIT, source: 'rule', shadow: false, cost: 0, tier: 'pro', tool: 'search', rule: 'search' },
    ]);
  });

  test('a rule matching on method only has no tool label', () => {
    const rule: PolicyRule = { name: 'lists', match: { method: 'tools/list' }, limits: WRITE_LIMIT, shadow: true };
    const [scope] = byScope(callerScopes(config([rule]), pro, NO_OVERRIDES, NOW), 'rule');
    expect(scope).toEqual({ key: ruleKeyOf('tok_pro', 'lists'), scope: 'rule', policies: WRITE_LIMIT, source: 'rule', shadow: true, cost: 0, tier: 'pro', rule: 'lists' });
    expect(scope !== undefined && 'tool' in scope).toBe(false);
  });

  test.each<[string, PolicyRule['match'], boolean]>([
    ['a rule for every call holds the token', {}, true],
    ['a rule for its tier holds the token', { tier: 'pro' }, true],
    ['a rule for another tier does not', { tier: 'default' }, false],
    ['a rule for the token holds it', { tokenId: 'tok_pro' }, true],
    ['a rule for another token does not', { tokenId: 'tok_other' }, false],
    ['a rule for its tier and the token holds it', { tier: 'pro', tokenId: 'tok_pro' }, true],
    ['a rule for its tier and another token does not', { tier: 'pro', tokenId: 'tok_other' }, false],
    ['a rule for another tier and the token does not', { tier: 'default', tokenId: 'tok_pro' }, false],
  ])('%s', (_name, match, held) => {
    const rule: PolicyRule = { name: 'r', match, limits: WRITE_LIMIT, shadow: false };
    expect(byScope(callerScopes(config([rule]), pro, NO_OVERRIDES, NOW), 'rule')).toHaveLength(held ? 1 : 0);
  });

  test('a rule matches the tier a token falls back to, not the tier it names', () => {
    const rules: PolicyRule[] = [
      { name: 'gold', match: { tier: 'gold' }, limits: WRITE_LIMIT, shadow: false },
      { name: 'default', match: { tier: 'default' }, limits: WRITE_LIMIT, shadow: false },
    ];
    const scopes = callerScopes(config(rules), { id: 'tok_x', tier: 'gold' }, NO_OVERRIDES, NOW);
    expect(byScope(scopes, 'rule').map((s) => s.rule)).toEqual(['default']);
  });

  test('a rule that only prices calls is no scope', () => {
    const rule: PolicyRule = { name: 'cost-only', match: { tool: 'search' }, cost: 5, shadow: false };
    expect(byScope(callerScopes(config([rule]), pro, NO_OVERRIDES, NOW), 'rule')).toEqual([]);
  });

  test('rules come in file order', () => {
    const rules: PolicyRule[] = [
      { name: 'b', match: {}, limits: WRITE_LIMIT, shadow: false },
      { name: 'a', match: {}, limits: SEARCH_LIMIT, shadow: false },
    ];
    expect(byScope(callerScopes(config(rules), pro, NO_OVERRIDES, NOW), 'rule').map((s) => s.rule)).toEqual(['b', 'a']);
  });
});

describe('callerScopes: overrides of a tool (token > tier > every token)', () => {
  test('an override for a tool replaces the rules naming that tool', () => {
    const scopes = callerScopes(config([searchRule]), pro, overrides({ target: { tokenId: 'tok_pro', tool: 'search' }, limit: 3 }), NOW);
    expect(byScope(scopes, 'rule')).toEqual([]);
    const tools = byScope(scopes, 'tool');
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({ key: toolKeyOf('tok_pro', 'search'), scope: 'tool', source: 'override', shadow: false, cost: 0, tier: 'pro', tool: 'search' });
    expect(tools[0]?.policies[0]?.limit).toBe(3);
  });

  test('an override for a tool keeps the rules naming other tools and the rules naming none', () => {
    const rules: PolicyRule[] = [
      searchRule,
      { name: 'fetch', match: { tool: 'fetch' }, limits: WRITE_LIMIT, shadow: false },
      { name: 'all', match: {}, limits: WRITE_LIMIT, shadow: false },
    ];
    const scopes = callerScopes(config(rules), pro, overrides({ target: { tool: 'search' }, limit: 3 }), NOW);
    expect(byScope(scopes, 'rule').map((s) => s.rule)).toEqual(['fetch', 'all']);
  });

  test('a shadow override for a tool keeps the rules and has its own shadow key', () => {
    const scopes = callerScopes(config([searchRule]), pro, overrides({ target: { tokenId: 'tok_pro', tool: 'search' }, limit: 3, shadow: true }), NOW);
    expect(byScope(scopes, 'rule').map((s) => s.rule)).toEqual(['search']);
    const tools = byScope(scopes, 'tool');
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({ key: shadowKeyOf('tok_pro', 'search'), scope: 'tool', source: 'override', shadow: true, tool: 'search' });
  });

  test.each<[string, OverrideSpec[], number | undefined]>([
    ['an override for every token applies', [{ target: { tool: 'search' }, limit: 1 }], 1],
    ['an override for its tier applies', [{ target: { tier: 'pro', tool: 'search' }, limit: 2 }], 2],
    ['an override for the token applies', [{ target: { tokenId: 'tok_pro', tool: 'search' }, limit: 3 }], 3],
    ['an override for another tier does not', [{ target: { tier: 'default', tool: 'search' }, limit: 2 }], undefined],
    ['an override for another token does not', [{ target: { tokenId: 'tok_other', tool: 'search' }, limit: 3 }], undefined],
    ['an expired override does not', [{ target: { tokenId: 'tok_pro', tool: 'search' }, limit: 3, expiresAtMs: NOW }], undefined],
    [
      'the token override wins over the tier and every-token ones, set in that order',
      [{ target: { tool: 'search' }, limit: 1 }, { target: { tier: 'pro', tool: 'search' }, limit: 2 }, { target: { tokenId: 'tok_pro', tool: 'search' }, limit: 3 }],
      3,
    ],
    [
      'the token override wins over the tier and every-token ones, set in the reverse order',
      [{ target: { tokenId: 'tok_pro', tool: 'search' }, limit: 3 }, { target: { tier: 'pro', tool: 'search' }, limit: 2 }, { target: { tool: 'search' }, limit: 1 }],
      3,
    ],
    ['the tier override wins over the every-token one, set after it', [{ target: { tool: 'search' }, limit: 1 }, { target: { tier: 'pro', tool: 'search' }, limit: 2 }], 2],
    ['the tier override wins over the every-token one, set before it', [{ target: { tier: 'pro', tool: 'search' }, limit: 2 }, { target: { tool: 'search' }, limit: 1 }], 2],
    ['an expired token override leaves the tier one', [{ target: { tokenId: 'tok_pro', tool: 'search' }, limit: 3, expiresAtMs: NOW - 1 }, { target: { tier: 'pro', tool: 'search' }, limit: 2 }], 2],
    ['another token override leaves the every-token one', [{ target: { tool: 'search' }, limit: 1 }, { target: { tokenId: 'tok_other', tool: 'search' }, limit: 3 }], 1],
  ])('%s', (_name, list, limit) => {
    const tools = byScope(callerScopes(config(), pro, overrides(...list), NOW), 'tool');
    if (limit === undefined) {
      expect(tools).toEqual([]);
    } else {
      expect(tools).toHaveLength(1);
      expect(tools[0]?.policies[0]?.limit).toBe(limit);
    }
  });

  test('overrides of different tools are scopes of their own, after the rules', () => {
    const scopes = callerScopes(config([{ name: 'all', match: {}, limits: WRITE_LIMIT, shadow: false }]), pro, overrides({ target: { tool: 'a' }, limit: 1 }, { target: { tool: 'b' }, limit: 2 }), NOW);
    expect(scopes.map((s) => s.scope)).toEqual(['tier', 'free', 'rule', 'tool', 'tool']);
    expect(byScope(scopes, 'tool').map((s) => s.tool)).toEqual(['a', 'b']);
  });
});

describe('callerScopes: properties', () => {
  const tokens = [pro, plain, { id: 'tok_x', tier: 'gold' }];
  const tools = ['search', 'fetch'];
  const rules: PolicyRule[] = [
    searchRule,
    { name: 'fetch-pro', match: { tool: 'fetch', tier: 'pro' }, limits: WRITE_LIMIT, shadow: true },
    { name: 'plain-only', match: { tokenId: 'tok_plain' }, limits: WRITE_LIMIT, shadow: false },
    { name: 'priced', match: { tool: 'fetch' }, cost: 2, shadow: false },
  ];
  // The targets a stored override can have (limit-override-record.ts): a token or a tier, not both, and at least one field.
  const target = fc
    .record({
      who: fc.constantFrom<OverrideTarget>({ tokenId: 'tok_pro' }, { tokenId: 'tok_plain' }, { tokenId: 'tok_x' }, { tokenId: 'tok_other' }, { tier: 'pro' }, { tier: 'default' }, { tier: 'gold' }, {}),
      tool: fc.option(fc.constantFrom(...tools), { nil: undefined }),
    })
    .filter(({ who, tool }) => Object.keys(who).length > 0 || tool !== undefined)
    .map(({ who, tool }): OverrideTarget => (tool === undefined ? who : { ...who, tool }));
  const overrideList = fc.array(
    fc.record({
      target,
      limit: fc.integer({ min: 1, max: 50 }),
      shadow: fc.boolean(),
      expiresAtMs: fc.option(fc.integer({ min: NOW - 2, max: NOW + 2 }), { nil: null }),
    }),
    { maxLength: 6 },
  );

  const calls = fc.constantFrom<CallTarget>(...tools.map((tool) => ({ method: 'tools/call', tool })), { method: 'tools/call', tool: 'rate_limit_status' }, { method: 'ping' });

  test('every charge a call of the token spends is one of its scopes, with the same limits, source, shadow flag and tool label', () => {
    fc.assert(
      fc.property(fc.constantFrom(...tokens), overrideList, calls, (token, list, call) => {
        const index = overrides(...list);
        const scopes = new Map(callerScopes(config(rules), token, index, NOW).map((s) => [s.key, s]));
        for (const charge of resolveCharges(config(rules), [call], token, index, NOW).charges) {
          const scope = scopes.get(charge.key);
          expect(scope).toBeDefined();
          expect(scope).toMatchObject({ scope: charge.scope, policies: charge.policies, shadow: charge.shadow, source: charge.source, tier: charge.tier, cost: 0 });
          expect(scope !== undefined && 'tool' in scope).toBe('tool' in charge);
          expect(scope?.tool).toBe(charge.tool);
        }
      }),
    );
  });

  test('no two scopes share a key and every scope costs 0', () => {
    fc.assert(
      fc.property(fc.constantFrom(...tokens), overrideList, (token, list) => {
        const scopes = callerScopes(config(rules), token, overrides(...list), NOW);
        expect(new Set(keys(scopes)).size).toBe(scopes.length);
        expect(scopes.every((s) => s.cost === 0)).toBe(true);
      }),
    );
  });
});
