import { loadConfig } from '../../src/config/config';
import { ConfigError } from '../../src/config/config-error';
import { toolsNamedButNotServed, unknownToolProblems } from '../../src/config/known-tools';
import { FREE_PER_MINUTE_DEFAULT } from '../../src/policies/free-calls';
import { parseToolCosts } from '../../src/library/mcp/tool-costs';

function problems(env: NodeJS.ProcessEnv, file?: unknown): string[] {
  try {
    loadConfig({ ...(file === undefined ? {} : { LIMITS_FILE: 'l.json' }), ...env }, { readFile: () => (typeof file === 'string' ? file : JSON.stringify(file)) });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.knob}: ${p.problem} | fix: ${p.fix}`);
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

const load = (env: NodeJS.ProcessEnv, file?: unknown) =>
  loadConfig({ ...(file === undefined ? {} : { LIMITS_FILE: 'l.json' }), ...env }, { readFile: () => JSON.stringify(file) });

describe('RATE_LIMIT_TOOL_COSTS', () => {
  test.each([
    ['search=5,whoami=1', [['search', 5], ['whoami', 1]]],
    [' search=5 , whoami=0 ', [['search', 5], ['whoami', 0]]],
    ['files.read=3', [['files.read', 3]]],
    ['', []],
  ])('%p parses to %j', (text, costs) => {
    expect(parseToolCosts(text)).toEqual({ ok: true, costs: new Map(costs as [string, number][]) });
  });

  test.each([
    ['search', /"search" is not tool=cost/],
    ['search=-1', /"search=-1" is not tool=cost/],
    ['search=1.5', /"search=1.5" is not tool=cost/],
    ['search=99999999', /is not tool=cost .* from 0 to 1000000/],
    ['sea rch=1', /is not tool=cost/],
    ['a=1,a=2', /^a is given a cost twice$/],
  ])('%p is refused', (text, message) => {
    const parsed = parseToolCosts(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatch(message);
  });

  test('a bad value stops the boot naming the knob and the fix', () => {
    expect(problems({ RATE_LIMIT_TOOL_COSTS: 'search:5' })).toEqual([expect.stringMatching(/^RATE_LIMIT_TOOL_COSTS: .*is not tool=cost.* \| fix: set RATE_LIMIT_TOOL_COSTS to a comma list of tool=cost/)]);
  });

  test('the knob and the file costs are merged; a tool in both is refused', () => {
    expect(load({ RATE_LIMIT_TOOL_COSTS: 'whoami=3' }, { costs: { rate_limit_status: 1 } }).rateLimit.calls.costs).toEqual(new Map([['rate_limit_status', 1], ['whoami', 3]]));
    expect(problems({ RATE_LIMIT_TOOL_COSTS: 'whoami=3' }, { costs: { whoami: 2 } })).toEqual([expect.stringMatching(/^RATE_LIMIT_TOOL_COSTS: whoami is given a cost here and in LIMITS_FILE's costs/)]);
  });

  test('an unknown tool is a boot problem naming the tools served and the knob it came from', () => {
    const config = load({ RATE_LIMIT_TOOL_COSTS: 'serch=5' }, { costs: { whoam: 1 }, rules: [{ name: 'r', match: { tool: 'nope' }, cost: 2 }] });
    expect(unknownToolProblems(config.rateLimit.calls, config.rateLimit.toolCostsFromEnv, ['rate_limit_status', 'whoami']).map((p) => `${p.knob}: ${p.problem} | fix: ${p.fix}`)).toEqual([
      'LIMITS_FILE: costs: no tool is named "whoam" (tools served: rate_limit_status, whoami) | fix: name one of the tools served (rate_limit_status, whoami), or remove whoam',
      'RATE_LIMIT_TOOL_COSTS: no tool is named "serch" (tools served: rate_limit_status, whoami) | fix: name one of the tools served (rate_limit_status, whoami), or remove serch',
      'LIMITS_FILE: rules[0].match.tool: no tool is named "nope" (tools served: rate_limit_status, whoami) | fix: name one of the tools served (rate_limit_status, whoami), or remove the rule "r"',
    ]);
  });
});

describe('tools named but not served here (in front of an upstream)', () => {
  test('every name a cost or a rule gives that firelimit does not serve, once each, sorted', () => {
    const config = load({ RATE_LIMIT_TOOL_COSTS: 'search=5,whoami=1' }, { costs: { fetch: 2 }, rules: [{ name: 'r', match: { tool: 'search' }, cost: 2 }, { name: 'm', match: { method: 'tools/list' }, cost: 0 }] });
    expect(toolsNamedButNotServed(config.rateLimit.calls, ['rate_limit_status', 'whoami'])).toEqual(['fetch', 'search']);
  });

  test('none when every name is served', () => {
    const config = load({ RATE_LIMIT_TOOL_COSTS: 'whoami=2' });
    expect(toolsNamedButNotServed(config.rateLimit.calls, ['rate_limit_status', 'whoami'])).toEqual([]);
  });
});

describe('the free limit', () => {
  test(`defaults to ${FREE_PER_MINUTE_DEFAULT} a minute, fixed window, and RATE_LIMIT_FREE_PER_MINUTE sets it`, () => {
    expect(load({}).rateLimit.calls.free).toEqual([{ name: 'free', algorithm: 'fixed-window', limit: FREE_PER_MINUTE_DEFAULT, windowMs: 60_000 }]);
    expect(load({ RATE_LIMIT_FREE_PER_MINUTE: '30' }).rateLimit.calls.free[0].limit).toBe(30);
    expect(problems({ RATE_LIMIT_FREE_PER_MINUTE: '0' })).toEqual([expect.stringMatching(/^RATE_LIMIT_FREE_PER_MINUTE: expected a positive whole number/)]);
  });
});

describe('LIMITS_FILE rules', () => {
  test('a rule gives a cost and extra limits with any algorithm; match.token is a token id', () => {
    const config = load(
      { RATE_LIMIT_TIERS: 'pro=600' },
      {
        rules: [
          { name: 'search', match: { tool: 'whoami', tier: 'pro', token: 'tok_abc' }, cost: 5, limits: [{ algorithm: 'token-bucket', limit: 10, window: '1m', burst: 3 }] },
          { name: 'reads', match: { method: 'resources/read' }, limits: [{ limit: 5, window: '1s' }, { limit: 100, window: '1h' }], shadow: true },
        ],
      },
    );
    expect(config.rateLimit.calls.rules).toEqual([
      { name: 'search', match: { tool: 'whoami', tier: 'pro', tokenId: 'tok_abc' }, cost: 5, shadow: false, limits: [{ name: 'search', algorithm: 'token-bucket', limit: 10, windowMs: 60_000, burst: 3 }] },
      {
        name: 'reads',
        match: { method: 'resources/read' },
        shadow: true,
        limits: [
          { name: 'reads-1s', algorithm: 'fixed-window', limit: 5, windowMs: 1000 },
          { name: 'reads-1h', algorithm: 'fixed-window', limit: 100, windowMs: 3_600_000 },
        ],
      },
    ]);
  });

  test('a file of rules alone (no tiers) is accepted', () => {
    expect(load({}, { rules: [{ name: 'r', match: { tool: 'whoami' }, cost: 2 }] }).rateLimit.tiers.map((t) => t.name)).toEqual(['default']);
  });

  test.each([
    ['a rule without a name', { rules: [{ cost: 1 }] }, /^LIMITS_FILE: rules\[0\]\.name: expected a rule name/],
    ['two rules with one name', { rules: [{ name: 'a', cost: 1 }, { name: 'a', cost: 2 }] }, /^LIMITS_FILE: rules\[1\]: a second rule is named "a"/],
    ['a rule with neither cost nor limits', { rules: [{ name: 'a', match: { tool: 'whoami' } }] }, /^LIMITS_FILE: rules\[0\]: the rule gives neither "cost" nor "limits"/],
    ['a shadow rule with a cost', { rules: [{ name: 'a', cost: 2, shadow: true }] }, /^LIMITS_FILE: rules\[0\]: a shadow rule cannot set a cost/],
    ['a tool with another method', { rules: [{ name: 'a', match: { tool: 'whoami', method: 'resources/read' }, cost: 2 }] }, /^LIMITS_FILE: rules\[0\]: match\.tool names a tool but match\.method is resources\/read/],
    ['a negative cost', { rules: [{ name: 'a', cost: -1 }] }, /^LIMITS_FILE: rules\[0\]\.cost: expected 0 or more/],
    ['an unknown match field', { rules: [{ name: 'a', match: { tol: 'x' }, cost: 1 }] }, /^LIMITS_FILE: rules\[0\]\.match: unknown field "tol"/],
    ['a per-address rule without limits', { rules: [{ name: 'a', per: 'address', cost: 2 }] }, /^LIMITS_FILE: rules\[0\]: "per": "address" counts the rule's limits per client address, and the rule gives none/],
    ['an unknown "per"', { rules: [{ name: 'a', per: 'tenant', limits: [{ limit: 1, window: '1m' }] }] }, /^LIMITS_FILE: rules\[0\]\.per: expected "caller"/],
    ['a secret instead of a token id', { rules: [{ name: 'a', match: { token: 'flk_secret' }, cost: 1 }] }, /^LIMITS_FILE: rules\[0\]\.match\.token: expected a token id \(tok_\.\.\.\) or a signed-in caller id \(sub_\.\.\.\), never a secret/],
    ['an unknown tier', { rules: [{ name: 'a', match: { tier: 'gold' }, cost: 1 }] }, /^LIMITS_FILE: rules\[0\]\.match\.tier: no tier is named "gold" \(tiers: default\)/],
    ['an unknown algorithm in a rule limit', { rules: [{ name: 'a', limits: [{ limit: 1, window: '1m', algorithm: 'gcra' }] }] }, /^LIMITS_FILE: rules\[0\]\.limits\[0\]\.algorithm: expected one of/],
    ['two rule limits in one slot', { rules: [{ name: 'a', limits: [{ limit: 1, window: '1m' }, { limit: 2, window: '1m' }] }] }, /^LIMITS_FILE: rules\[0\]: policies "a-1m" and "a-1m" are both|^LIMITS_FILE: rules\[0\]: two policies in one set are both named "a-1m"/],
    ['a burst on a window in a rule', { rules: [{ name: 'a', limits: [{ limit: 1, window: '1m', burst: 2 }] }] }, /^LIMITS_FILE: rules\[0\]\.limits\[0\]\.burst: only token-bucket and leaky-bucket have a burst/],
    ['a negative file cost', { costs: { whoami: -2 } }, /^LIMITS_FILE: costs\.whoami: expected 0 or more/],
  ])('%s is refused with its path', (_name, file, expected) => {
    expect(problems({}, file)).toEqual([expect.stringMatching(expected)]);
  });
});
