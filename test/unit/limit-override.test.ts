import fc from 'fast-check';
import type { PolicySet } from '../../src/library/window/policy';
import { isLive, NO_OVERRIDES, overrideFor, overrideIdOf, type LimitOverride, type OverrideIndex, type OverrideTarget } from '../../src/policies/limit-override';

const NOW = 1_700_000_000_000;
const MINUTE = 60_000;

function overrideOf(target: OverrideTarget, expiresAtMs: number | null = null): LimitOverride {
  return {
    target,
    policies: [{ name: overrideIdOf(target), limit: 1, windowMs: MINUTE }] as unknown as PolicySet,
    shadow: false,
    setAtMs: NOW - 1000,
    expiresAtMs,
  };
}

function index(...list: LimitOverride[]): OverrideIndex {
  return new Map(list.map((o) => [overrideIdOf(o.target), o]));
}

describe('overrideIdOf: one id per target', () => {
  test.each<[OverrideTarget, string]>([
    [{ tokenId: 'tok_a' }, 'token=tok_a'],
    [{ tier: 'pro' }, 'tier=pro'],
    [{ tool: 'search' }, 'tool=search'],
    [{ tokenId: 'tok_a', tool: 'search' }, 'token=tok_a;tool=search'],
    [{ tier: 'pro', tool: 'search' }, 'tier=pro;tool=search'],
    [{ tokenId: 'tok_a', tier: 'pro', tool: 'search' }, 'token=tok_a;tier=pro;tool=search'],
    [{}, ''],
  ])('%o has the id %s', (target, id) => {
    expect(overrideIdOf(target)).toBe(id);
  });

  test('two different targets never share an id', () => {
    const target = fc.record({ tokenId: fc.constantFrom('tok_a', 'tok_b'), tier: fc.constantFrom('pro', 'default'), tool: fc.constantFrom('search', 'fetch') }, { requiredKeys: [] });
    fc.assert(
      fc.property(target, target, (a, b) => {
        const same = a.tokenId === b.tokenId && a.tier === b.tier && a.tool === b.tool;
        expect(overrideIdOf(a) === overrideIdOf(b)).toBe(same);
      }),
    );
  });
});

describe('isLive: an override applies until its expiry', () => {
  test.each<[string, number | null, boolean]>([
    ['one without expiry is live', null, true],
    ['one expiring after now is live', NOW + 1, true],
    ['one expiring now is no longer live', NOW, false],
    ['one that expired is not live', NOW - 1, false],
  ])('%s', (_name, expiresAtMs, live) => {
    expect(isLive(overrideOf({ tokenId: 'tok_a' }, expiresAtMs), NOW)).toBe(live);
  });
});

describe('overrideFor: the most specific live override of a scope', () => {
  const token = overrideOf({ tokenId: 'tok_a' });
  const tier = overrideOf({ tier: 'pro' });
  const tokenTool = overrideOf({ tokenId: 'tok_a', tool: 'search' });
  const tierTool = overrideOf({ tier: 'pro', tool: 'search' });
  const everyTool = overrideOf({ tool: 'search' });

  test.each<[string, OverrideIndex, string | undefined, LimitOverride | undefined]>([
    ['none when there are none', NO_OVERRIDES, undefined, undefined],
    ['the token one for the tier limits', index(tier, token), undefined, token],
    ['the tier one when the token has none', index(tier), undefined, tier],
    ['no tool override for the tier limits', index(tokenTool, tierTool, everyTool), undefined, undefined],
    ['no every-token override for the tier limits', index(overrideOf({ tool: 'search' })), undefined, undefined],
    ['none for another token or tier', index(overrideOf({ tokenId: 'tok_b' }), overrideOf({ tier: 'default' })), undefined, undefined],
    ['the token-and-tool one for the tool', index(everyTool, tierTool, tokenTool), 'search', tokenTool],
    ['the tier-and-tool one when the token has none for the tool', index(everyTool, tierTool), 'search', tierTool],
    ['the every-token one when nothing narrower names the tool', index(everyTool), 'search', everyTool],
    ['no tier-limits override for a tool', index(token, tier), 'search', undefined],
    ['none for another tool', index(overrideOf({ tool: 'fetch' })), 'search', undefined],
    ['the tier one once the token one expired', index(overrideOf({ tokenId: 'tok_a' }, NOW), tier), undefined, tier],
    ['none once the tier one expired', index(overrideOf({ tier: 'pro' }, NOW - 1)), undefined, undefined],
    ['the every-token one once the narrower ones expired', index(overrideOf({ tokenId: 'tok_a', tool: 'search' }, NOW), overrideOf({ tier: 'pro', tool: 'search' }, NOW), everyTool), 'search', everyTool],
    ['none once the every-token one expired', index(overrideOf({ tool: 'search' }, NOW)), 'search', undefined],
  ])('%s', (_name, overrides, tool, expected) => {
    expect(overrideFor(overrides, 'tok_a', 'pro', tool, NOW)).toBe(expected);
  });
});
