import fc from 'fast-check';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { callTargetsOf, type CallTarget } from '../../src/library/mcp/call-target';
import { FREE_PER_MINUTE_DEFAULT } from '../../src/policies/free-calls';
import { NO_OVERRIDES, overrideIdOf, type LimitOverride, type OverrideIndex, type OverrideTarget } from '../../src/policies/limit-override';
import type { PolicyRule } from '../../src/policies/policy-rule';
import { resolveCharges, type Charge, type ResolverConfig } from '../../src/policies/resolve-charges';

const NOW = 1_700_000_000_000;
const MINUTE = 60_000;
const set = (...policies: RateLimitPolicy[]): PolicySet => policies as unknown as PolicySet;
const DEFAULT_SET = set({ name: 'default', limit: 120, windowMs: MINUTE });
const PRO_SET = set({ name: 'pro', limit: 600, windowMs: MINUTE });
const FREE_SET = set({ name: 'free', limit: FREE_PER_MINUTE_DEFAULT, windowMs: MINUTE });
const SEARCH_LIMIT = set({ name: 'search-per-minute', limit: 10, windowMs: MINUTE });

function config(rules: PolicyRule[] = [], costs: Record<string, number> = {}): ResolverConfig {
  return {
    tiers: [
      { name: 'default', policies: DEFAULT_SET },
      { name: 'pro', policies: PRO_SET },
    ],
    defaultTier: { name: 'default', policies: DEFAULT_SET },
    policies: { costs: new Map(Object.entries(costs)), rules, free: FREE_SET },
  };
}

function overrides(...list: { target: OverrideTarget; limit: number; shadow?: boolean; expiresAtMs?: number | null }[]): OverrideIndex {
  return new Map(
    list.map((o): [string, LimitOverride] => [
      overrideIdOf(o.target),
      {
        target: o.target,
        policies: set({ name: o.target.tool === undefined ? 'override' : `override-${o.target.tool}`, limit: o.limit, windowMs: MINUTE }),
        shadow: o.shadow ?? false,
        setAtMs: NOW - 1000,
        expiresAtMs: o.expiresAtMs ?? null,
      },
    ]),
  );
}

const call = (tool: string): CallTarget => ({ method: 'tools/call', tool });
const pro = { id: 'tok_pro', tier: 'pro' };
const plain = { id: 'tok_plain', tier: 'default' };

function only(charges: readonly Charge[], scope: Charge['scope']): Charge {
  const found = charges.filter((c) => c.scope === scope && !c.shadow);
  expect(found).toHaveLength(1);
  return found[0] as Charge;
}

describe('callTargetsOf', () => {
  test.each([
    ['a tool call', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami' } }, [{ method: 'tools/call', tool: 'whoami' }]],
    ['a tool call without a name', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }, [{ method: 'tools/call' }]],
    ['a notification', { jsonrpc: '2.0', method: 'notifications/initialized' }, [{ method: 'notifications/initialized' }]],
    ['a client response', { jsonrpc: '2.0', id: 3, result: {} }, [{ method: '(response)' }]],
    [
      'a batch, in order',
      [
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'a' } },
      ],
      [{ method: 'ping' }, { method: 'tools/call', tool: 'a' }],
    ],
  ])('reads %s', (_name, body, targets) => {
    expect(callTargetsOf(body)).toEqual(targets);
  });
});

describe('resolveCharges: what a call costs', () => {
  test.each([
    ['initialize', { method: 'initialize' }],
    ['notifications/initialized', { method: 'notifications/initialized' }],
    ['notifications/cancelled', { method: 'notifications/cancelled' }],
    ['ping', { method: 'ping' }],
    ['tools/list', { method: 'tools/list' }],
    ['resources/list', { method: 'resources/list' }],
    ['resources/templates/list', { method: 'resources/templates/list' }],
    ['prompts/list', { method: 'prompts/list' }],
    ['rate_limit_status', call('rate_limit_status')],
  ])('%s costs 0 of the tier and 1 of the free limit', (_name, target) => {
    const plan = resolveCharges(config(), [target], plain, NO_OVERRIDES, NOW);
    expect(plan.charges).toEqual([expect.objectContaining({ key: 'tok_plain~free', scope: 'free', policies: FREE_SET, cost: 1 })]);
    expect(plan.messages[0]).toMatchObject({ cost: 0, costSource: 'fallback' });
  });

  test.each([
    ['a tool call', call('whoami')],
    ['resources/read', { method: 'resources/read' }],
    ['an unknown tool', call('nope')],
  ])('%s costs 1 of the tier by default', (_name, target) => {
    const plan = resolveCharges(config(), [target], plain, NO_OVERRIDES, NOW);
    expect(plan.charges).toEqual([expect.objectContaining({ key: 'tok_plain', scope: 'tier', policies: DEFAULT_SET, cost: 1, source: 'tier' })]);
  });

  test('a tool cost from the costs table prices the call', () => {
    const plan = resolveCharges(config([], { whoami: 5 }), [call('whoami')], plain, NO_OVERRIDES, NOW);
    expect(only(plan.charges, 'tier').cost).toBe(5);
    expect(plan.messages[0]).toMatchObject({ cost: 5, costSource: 'costs' });
  });

  test('a rule cost wins over the costs table (rule > default), and the first matching rule with a cost wins', () => {
    const rules: PolicyRule[] = [
      { name: 'pro-whoami', match: { tool: 'whoami', tier: 'pro' }, cost: 2, shadow: false },
      { name: 'all-whoami', match: { tool: 'whoami' }, cost: 3, shadow: false },
    ];
    expect(resolveCharges(config(rules, { whoami: 5 }), [call('whoami')], pro, NO_OVERRIDES, NOW).messages[0]).toMatchObject({ cost: 2, costSource: 'rule', rule: 'pro-whoami' });
    expect(resolveCharges(config(rules, { whoami: 5 }), [call('whoami')], plain, NO_OVERRIDES, NOW).messages[0]).toMatchObject({ cost: 3, costSource: 'rule', rule: 'all-whoami' });
  });

  test('a rule can make chatter cost units of the tier', () => {
    const rules: PolicyRule[] = [{ name: 'paid-init', match: { method: 'initialize' }, cost: 1, shadow: false }];
    const plan = resolveCharges(config(rules), [{ method: 'initialize' }], plain, NO_OVERRIDES, NOW);
    expect(plan.charges).toEqual([expect.objectContaining({ scope: 'tier', cost: 1 })]);
  });

  test('a configured cost of 0 makes a tool free: it spends the free limit instead', () => {
    const plan = resolveCharges(config([], { whoami: 0 }), [call('whoami')], plain, NO_OVERRIDES, NOW);
    expect(plan.charges).toEqual([expect.objectContaining({ scope: 'free', cost: 1 })]);
  });

  test('a batch costs the sum of its messages, each key charged once', () => {
    const body = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'whoami' } },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'search' } },
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'search' } },
    ];
    const rules: PolicyRule[] = [{ name: 'search-per-minute', match: { tool: 'search' }, limits: SEARCH_LIMIT, shadow: false }];
    const plan = resolveCharges(config(rules, { search: 5 }), callTargetsOf(body), plain, NO_OVERRIDES, NOW);
    expect(plan.charges.map((c) => [c.key, c.cost])).toEqual([
      ['tok_plain~free', 2],
      ['tok_plain', 11],
      ['tok_plain~rule~search-per-minute', 2],
    ]);
  });
});

describe('resolveCharges: which limits hold a call (override > rule > tier default > fallback)', () => {
  test('fallback: a token whose tier is not configured is held to the default tier', () => {
    const plan = resolveCharges(config(), [call('whoami')], { id: 'tok_x', tier: 'retired' }, NO_OVERRIDES, NOW);
    expect(only(plan.charges, 'tier')).toMatchObject({ policies: DEFAULT_SET, source: 'fallback', tier: 'default' });
    expect(plan.tierSource).toBe('fallback');
  });

  test('tier default: a configured tier holds its tokens', () => {
    expect(only(resolveCharges(config(), [call('whoami')], pro, NO_OVERRIDES, NOW).charges, 'tier')).toMatchObject({ policies: PRO_SET, source: 'tier' });
  });

  test('rule: a rule naming a tool adds its limits, counted in calls per token and rule, on top of the tier', () => {
    const rules: PolicyRule[] = [{ name: 'search-per-minute', match: { tool: 'search' }, limits: SEARCH_LIMIT, shadow: false }];
    const plan = resolveCharges(config(rules, { search: 5 }), [call('search')], pro, NO_OVERRIDES, NOW);
    expect(only(plan.charges, 'tier')).toMatchObject({ key: 'tok_pro', policies: PRO_SET, cost: 5 });
    expect(only(plan.charges, 'rule')).toMatchObject({ key: 'tok_pro~rule~search-per-minute', policies: SEARCH_LIMIT, cost: 1, tool: 'search', rule: 'search-per-minute' });
    expect(resolveCharges(config(rules), [call('whoami')], pro, NO_OVERRIDES, NOW).charges.map((c) => c.scope)).toEqual(['tier']);
  });

  test.each([
    ['tier', { tier: 'pro' }, true],
    ['tier', { tier: 'default' }, false],
    ['token id', { tokenId: 'tok_pro' }, true],
    ['token id', { tokenId: 'tok_other' }, false],
    ['method', { method: 'tools/call' }, true],
    ['method', { method: 'resources/read' }, false],
    ['tool and tier', { tool: 'search', tier: 'pro' }, true],
    ['tool and tier', { tool: 'search', tier: 'default' }, false],
  ])('a rule matching on %s (%j) applies: %p', (_field, match, applies) => {
    const rules: PolicyRule[] = [{ name: 'r', match, limits: SEARCH_LIMIT, shadow: false }];
    const plan = resolveCharges(config(rules), [call('search')], pro, NO_OVERRIDES, NOW);
    expect(plan.charges.some((c) => c.scope === 'rule')).toBe(applies);
  });

  test('override: a token override replaces its tier on the same key; a tier override replaces the tier for its tokens; the token one wins', () => {
    const tierOnly = overrides({ target: { tier: 'pro' }, limit: 50 });
    expect(only(resolveCharges(config(), [call('whoami')], pro, tierOnly, NOW).charges, 'tier')).toMatchObject({ key: 'tok_pro', source: 'override', policies: [expect.objectContaining({ limit: 50 })] });
    const both = overrides({ target: { tier: 'pro' }, limit: 50 }, { target: { tokenId: 'tok_pro' }, limit: 7 });
    expect(only(resolveCharges(config(), [call('whoami')], pro, both, NOW).charges, 'tier').policies[0].limit).toBe(7);
    expect(only(resolveCharges(config(), [call('whoami')], plain, both, NOW).charges, 'tier')).toMatchObject({ source: 'tier', policies: DEFAULT_SET });
  });

  test('override: a tool override replaces the rules naming that tool, not broader rules; token > tier > every token', () => {
    const rules: PolicyRule[] = [
      { name: 'search-per-minute', match: { tool: 'search' }, limits: SEARCH_LIMIT, shadow: false },
      { name: 'pro-calls', match: { tier: 'pro' }, limits: set({ name: 'pro-day', limit: 10_000, windowMs: 86_400_000 }), shadow: false },
    ];
    const index = overrides({ target: { tool: 'search' }, limit: 3 }, { target: { tier: 'pro', tool: 'search' }, limit: 4 }, { target: { tokenId: 'tok_pro', tool: 'search' }, limit: 5 });
    const plan = resolveCharges(config(rules), [call('search')], pro, index, NOW);
    expect(plan.charges.map((c) => [c.key, c.scope, c.policies[0].limit])).toEqual([
      ['tok_pro', 'tier', 600],
      ['tok_pro~rule~pro-calls', 'rule', 10_000],
      ['tok_pro~tool~search', 'tool', 5],
    ]);
    expect(only(resolveCharges(config(rules), [call('search')], { id: 'tok_p2', tier: 'pro' }, index, NOW).charges, 'tool').policies[0].limit).toBe(4);
    expect(only(resolveCharges(config(rules), [call('search')], plain, index, NOW).charges, 'tool').policies[0].limit).toBe(3);
  });

  test('an expired override no longer applies, at the millisecond it expires', () => {
    const index = overrides({ target: { tokenId: 'tok_pro' }, limit: 7, expiresAtMs: NOW + 10 });
    expect(only(resolveCharges(config(), [call('whoami')], pro, index, NOW + 9).charges, 'tier').source).toBe('override');
    expect(only(resolveCharges(config(), [call('whoami')], pro, index, NOW + 10).charges, 'tier').source).toBe('tier');
  });

  test('a shadow override leaves the enforced limits alone and is charged on its own key, marked shadow', () => {
    const index = overrides({ target: { tokenId: 'tok_pro' }, limit: 7, shadow: true }, { target: { tool: 'search' }, limit: 2, shadow: true });
    const rules: PolicyRule[] = [{ name: 'search-per-minute', match: { tool: 'search' }, limits: SEARCH_LIMIT, shadow: false }];
    const plan = resolveCharges(config(rules), [call('search')], pro, index, NOW);
    expect(plan.charges.map((c) => [c.key, c.shadow, c.policies[0].limit])).toEqual([
      ['tok_pro', false, 600],
      ['tok_pro~shadow', true, 7],
      ['tok_pro~rule~search-per-minute', false, 10],
      ['tok_pro~shadow~tool~search', true, 2],
    ]);
  });

  test('a shadow rule is charged but marked shadow', () => {
    const rules: PolicyRule[] = [{ name: 'try', match: { tool: 'search' }, limits: SEARCH_LIMIT, shadow: true }];
    expect(resolveCharges(config(rules), [call('search')], pro, NO_OVERRIDES, NOW).charges.find((c) => c.scope === 'rule')).toMatchObject({ shadow: true });
  });
});

describe('resolveCharges: properties', () => {
  const target = fc.oneof(
    fc.constantFrom<CallTarget>({ method: 'initialize' }, { method: 'ping' }, { method: 'tools/list' }, { method: 'notifications/initialized' }, { method: 'resources/read' }),
    fc.constantFrom('whoami', 'search', 'rate_limit_status', 'nope').map(call),
  );
  const rules: PolicyRule[] = [
    { name: 'search-per-minute', match: { tool: 'search' }, limits: SEARCH_LIMIT, shadow: false },
    { name: 'pro-search-cost', match: { tool: 'search', tier: 'pro' }, cost: 4, shadow: false },
  ];
  const costs = fc.dictionary(fc.constantFrom('whoami', 'search'), fc.integer({ min: 0, max: 20 }));
  const token = fc.record({ id: fc.constantFrom('tok_a', 'tok_b'), tier: fc.constantFrom('default', 'pro', 'retired') });

  test('every request ends with at least one limit; each key once; the tier spends the sum of message costs; the free limit one per free message', () => {
    fc.assert(
      fc.property(fc.array(target, { minLength: 1, maxLength: 20 }), costs, token, (targets, table, tok) => {
        const plan = resolveCharges(config(rules, table), targets, tok, NO_OVERRIDES, NOW);
        expect(plan.charges.length).toBeGreaterThan(0);
        expect(new Set(plan.charges.map((c) => c.key)).size).toBe(plan.charges.length);
        const units = plan.messages.reduce((sum, m) => sum + m.cost, 0);
        expect(plan.charges.find((c) => c.scope === 'tier')?.cost ?? 0).toBe(units);
        expect(plan.charges.find((c) => c.scope === 'free')?.cost ?? 0).toBe(plan.messages.filter((m) => m.cost === 0).length);
        expect(plan.charges.find((c) => c.scope === 'rule')?.cost ?? 0).toBe(targets.filter((t) => t.tool === 'search').length);
        for (const c of plan.charges) expect(c.key.startsWith(tok.id)).toBe(true);
      }),
    );
  });

  test('a batch is priced as the sum of its messages priced alone', () => {
    fc.assert(
      fc.property(fc.array(target, { minLength: 1, maxLength: 10 }), costs, token, (targets, table, tok) => {
        const whole = resolveCharges(config(rules, table), targets, tok, NO_OVERRIDES, NOW);
        const summed = new Map<string, number>();
        for (const t of targets) for (const c of resolveCharges(config(rules, table), [t], tok, NO_OVERRIDES, NOW).charges) summed.set(c.key, (summed.get(c.key) ?? 0) + c.cost);
        expect(new Map(whole.charges.map((c) => [c.key, c.cost]))).toEqual(summed);
      }),
    );
  });
});

describe('resolveCharges: labels for metrics', () => {
  const withTools: ResolverConfig = { ...config(), tools: new Set(['whoami', 'rate_limit_status']) };

  test('a tier or free charge carries the tool label only for a served tool; a batch of several tools says so', () => {
    expect(resolveCharges(withTools, [call('whoami')], plain, NO_OVERRIDES, NOW).charges[0]).toMatchObject({ scope: 'tier', tool: 'whoami', tier: 'default' });
    expect(resolveCharges(withTools, [call('rate_limit_status')], plain, NO_OVERRIDES, NOW).charges[0]).toMatchObject({ scope: 'free', tool: 'rate_limit_status' });
    expect(resolveCharges(withTools, [call('made-up-by-client')], plain, NO_OVERRIDES, NOW).charges[0]?.tool).toBeUndefined();
    expect(resolveCharges(withTools, [call('whoami'), call('made-up-by-client')], plain, NO_OVERRIDES, NOW).charges[0]?.tool).toBe('(several)');
    expect(resolveCharges(withTools, [call('whoami'), call('whoami')], plain, NO_OVERRIDES, NOW).charges[0]?.tool).toBe('whoami');
  });

  test('a fallback tier is labelled with the default tier, never the token record\'s unknown name', () => {
    expect(resolveCharges(withTools, [call('whoami')], { id: 'tok_x', tier: 'typo' }, NO_OVERRIDES, NOW).charges[0]?.tier).toBe('default');
  });
});

describe('per-address rules (ADR 0055)', () => {
  const perAddress: PolicyRule = { name: 'one-address', match: { method: 'tools/call' }, limits: SEARCH_LIMIT, shadow: false, per: 'address' };
  const keysOf = (token: { id: string; tier: string; address?: string }, rules: PolicyRule[] = [perAddress]) =>
    resolveCharges(config(rules), [call('search')], token, NO_OVERRIDES, NOW).charges.filter((c) => c.scope === 'rule').map((c) => c.key);

  it('keys the rule on the address, so every caller from it shares one count, and each address has its own', () => {
    expect(keysOf({ ...pro, address: '198.51.100.7' })).toEqual(['ip~rule~one-address~198%2E51%2E100%2E7']);
    expect(keysOf({ ...plain, address: '198.51.100.7' })).toEqual(keysOf({ ...pro, address: '198.51.100.7' }));
    expect(keysOf({ ...pro, address: '198.51.100.8' })).not.toEqual(keysOf({ ...pro, address: '198.51.100.7' }));
  });

  it('counts a call without a known address under "unknown", never under no key at all', () => {
    expect(keysOf(pro)).toEqual(['ip~rule~one-address~unknown']);
  });

  it('leaves a rule without "per" per caller, whatever the address', () => {
    const perCaller: PolicyRule = { ...perAddress, per: undefined };
    expect(keysOf({ ...pro, address: '198.51.100.7' }, [perCaller])).toEqual(['tok_pro~rule~one-address']);
  });

  it('never builds a key that is some token\'s scope key, whatever the address text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (address) => {
        const [key] = keysOf({ ...pro, address });
        expect(key?.startsWith('ip~rule~one-address~')).toBe(true);
        expect(key).not.toMatch(/^(?:tok|sub)_/);
      }),
    );
  });
});
