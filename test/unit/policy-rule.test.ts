import type { CallTarget } from '../../src/library/mcp/call-target';
import { ruleMatches, type Caller, type RuleMatch } from '../../src/policies/policy-rule';

const caller: Caller = { tokenId: 'tok_a', tier: 'pro' };
const rule = (match: RuleMatch) => ({ name: 'r', match, shadow: false });

describe('ruleMatches: every field given must match', () => {
  test.each<[string, RuleMatch, CallTarget, boolean]>([
    ['no field matches any call', {}, { method: 'ping' }, true],
    ['a tool matches a call of it', { tool: 'search' }, { method: 'tools/call', tool: 'search' }, true],
    ['a tool does not match a call of another tool', { tool: 'search' }, { method: 'tools/call', tool: 'fetch' }, false],
    ['a tool does not match another method carrying its name', { tool: 'search' }, { method: 'prompts/get', tool: 'search' }, false],
    ['a method matches itself', { method: 'tools/list' }, { method: 'tools/list' }, true],
    ['a method does not match another', { method: 'tools/list' }, { method: 'tools/call', tool: 'search' }, false],
    ['a method is exact, not a prefix', { method: 'tools' }, { method: 'tools/list' }, false],
    ['a /* pattern matches the methods under it', { method: 'notifications/*' }, { method: 'notifications/progress' }, true],
    ['a /* pattern does not match a method that only shares its start', { method: 'notifications/*' }, { method: 'notificationsX' }, false],
    ['a /* pattern does not match another family', { method: 'notifications/*' }, { method: 'tools/list' }, false],
    ['a * without a slash is exact', { method: 'tools*' }, { method: 'tools/list' }, false],
    ['a method and a tool both match', { method: 'tools/call', tool: 'search' }, { method: 'tools/call', tool: 'search' }, true],
    ['the caller tier matches', { tier: 'pro' }, { method: 'ping' }, true],
    ['another tier does not', { tier: 'default' }, { method: 'ping' }, false],
    ['the caller token matches', { tokenId: 'tok_a' }, { method: 'ping' }, true],
    ['another token does not', { tokenId: 'tok_b' }, { method: 'ping' }, false],
    ['a matching tier with another token does not', { tier: 'pro', tokenId: 'tok_b' }, { method: 'ping' }, false],
    ['a matching method with another tier does not', { method: 'ping', tier: 'default' }, { method: 'ping' }, false],
  ])('%s', (_name, match, target, matches) => {
    expect(ruleMatches(rule(match), target, caller)).toBe(matches);
  });
});
