import { loadConfig } from '../../src/config/config';
import { ConfigError } from '../../src/config/config-error';
import { ownToolQuotaProblems } from '../../src/config/known-tools';
import { parseLimitsFile } from '../../src/config/limits-file';
import { parseUpstreamRate } from '../../src/config/upstream-rate';

// The limits file's `upstream.tools`: parsed on its own, then through loadConfig with the knobs' defaults.

const defaults = { algorithm: 'fixed-window' as const };
const file = (upstream: unknown): string => JSON.stringify({ upstream });
const URL_KNOB = { UPSTREAM_MCP_URL: 'http://127.0.0.1:3000/mcp' };

function problemsOf(text: string): string[] {
  const result = parseLimitsFile(text, defaults);
  if (result.ok) throw new Error('expected the file to be refused');
  return result.problems.map((p) => p.problem);
}

function configWith(upstream: unknown, env: Record<string, string> = URL_KNOB) {
  return loadConfig({ ...env, LIMITS_FILE: 'limits.json' }, { cwd: '/srv', readFile: (p) => (p === '/srv/limits.json' ? file(upstream) : '') });
}

function bootProblems(upstream: unknown, env: Record<string, string> = URL_KNOB): string[] {
  try {
    configWith(upstream, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.knob}: ${p.problem} | ${p.fix}`);
    throw error;
  }
  throw new Error('expected the config to be refused');
}

describe('parseLimitsFile: upstream.tools, each problem naming its field', () => {
  it.each([
    ['a rate without a unit', { tools: { search: { rate: '15' } } }, 'upstream.tools.search.rate: expected calls/unit'],
    ['a rate of 0', { tools: { search: { rate: '0/min' } } }, 'upstream.tools.search.rate: expected calls/unit'],
    ['a missing rate', { tools: { search: {} } }, 'upstream.tools.search.rate: expected calls/unit'],
    ['a headroom above 1', { tools: { search: { rate: '15/min', headroom: 1.5 } } }, 'upstream.tools.search.headroom: expected a fraction above 0 and at most 1'],
    ['a headroom of 0', { tools: { search: { rate: '15/min', headroom: 0 } } }, 'upstream.tools.search.headroom: expected a fraction above 0 and at most 1'],
    ['a headroom with 5 decimals', { tools: { search: { rate: '15/min', headroom: 0.12345 } } }, 'upstream.tools.search.headroom: expected at most 4 decimals'],
    ['a maxWait without a unit', { tools: { search: { rate: '15/min', maxWait: '30' } } }, 'upstream.tools.search.maxWait: expected a duration such as "30s" or "1m"'],
    ['a fractional daily budget', { tools: { search: { rate: '15/min', dailyBudget: 1.5 } } }, 'upstream.tools.search.dailyBudget: expected a whole number of calls'],
    ['a daily budget of 0', { tools: { search: { rate: '15/min', dailyBudget: 0 } } }, 'upstream.tools.search.dailyBudget: expected at least 1'],
    ['an unknown field on a quota', { tools: { search: { rate: '15/min', burst: 3 } } }, 'upstream.tools.search: unknown field "burst"'],
    ['an unknown field beside tools', { tool: {} }, 'upstream: unknown field "tool"'],
    ['a tool name with a space', { tools: { 'web search': { rate: '15/min' } } }, 'upstream.tools.web search: expected a tool name'],
  ])('%s', (_what, upstream, expected) => {
    const problems = problemsOf(file(upstream));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(expected);
  });

  it('reads every field, and leaves out what the file does not give', () => {
    const result = parseLimitsFile(file({ tools: { search: { rate: '15/min', headroom: 0.8, maxWait: '30s', dailyBudget: 1000 }, 'files.read': { rate: '2/s' } } }), defaults);
    expect(result.ok && [...result.upstreamTools]).toEqual([
      ['search', { limit: 15, windowMs: 60_000, headroom: 0.8, maxWaitMs: 30_000, dailyBudget: 1000 }],
      ['files.read', { limit: 2, windowMs: 1000 }],
    ]);
  });

  it('a file without an upstream section has no tool quotas', () => {
    const result = parseLimitsFile(JSON.stringify({ tiers: {} }), defaults);
    expect(result.ok && result.upstreamTools.size).toBe(0);
  });
});

describe('loadConfig: tool quotas take what they leave out from the knobs', () => {
  it('headroom and maxWait from UPSTREAM_HEADROOM and UPSTREAM_MAX_WAIT_MS, grace and hold from theirs, no daily budget', () => {
    const config = configWith({ tools: { search: { rate: '15/min' } } }, { ...URL_KNOB, UPSTREAM_HEADROOM: '0.75', UPSTREAM_MAX_WAIT_MS: '20000', UPSTREAM_GRACE_MS: '500', UPSTREAM_HOLD_MS: '100', UPSTREAM_DAILY_BUDGET: '99', UPSTREAM_RATE: '2/s' });
    expect(config.upstream?.toolQuotas.get('search')).toEqual({ limit: 15, windowMs: 60_000, headroom: 0.75, maxWaitMs: 20_000, dailyBudget: undefined, graceMs: 500, holdMs: 100 });
    // The shared quota is unchanged by them.
    expect(config.upstream?.quota).toEqual({ limit: 2, windowMs: 1000, headroom: 0.75, maxWaitMs: 20_000, dailyBudget: 99, graceMs: 500, holdMs: 100 });
  });

  it('the file\'s own figures win over the knobs', () => {
    const config = configWith({ tools: { search: { rate: '1/h', headroom: 1, maxWait: '2m', dailyBudget: 5 } } }, { ...URL_KNOB, UPSTREAM_HEADROOM: '0.5' });
    expect(config.upstream?.toolQuotas.get('search')).toMatchObject({ limit: 1, windowMs: 3_600_000, headroom: 1, maxWaitMs: 120_000, dailyBudget: 5 });
  });

  it('tool quotas without UPSTREAM_RATE: no shared quota, the tools\' own still apply', () => {
    const config = configWith({ tools: { search: { rate: '15/min' } } });
    expect(config.upstream?.quota).toBeUndefined();
    expect(config.upstream?.toolQuotas.size).toBe(1);
  });

  it('refuses tool quotas with nothing to front, naming the remedy', () => {
    expect(bootProblems({ tools: { search: { rate: '15/min' } } }, {})).toEqual([
      'LIMITS_FILE: upstream.tools: set, but UPSTREAM_MCP_URL is not | set UPSTREAM_MCP_URL to the MCP server to front, or remove "upstream" from LIMITS_FILE',
    ]);
  });

  it('refuses a quota the scheduler cannot honour (a wait longer than a week), naming the tool', () => {
    expect(bootProblems({ tools: { search: { rate: '15/min', maxWait: '8d' } } })).toEqual([
      expect.stringMatching(/^LIMITS_FILE: upstream\.tools\.search: maxWaitMs must be an integer in \[0, 604800000\], got 691200000 \| correct that quota/),
    ]);
  });
});

describe('ownToolQuotaProblems: a quota on firelimit\'s own tool never applies', () => {
  it('names each such tool and the fix; upstream tools pass', () => {
    expect(ownToolQuotaProblems(['search', 'whoami'], ['rate_limit_status', 'whoami'])).toEqual([
      {
        knob: 'LIMITS_FILE',
        problem: "upstream.tools.whoami: whoami is firelimit's own tool, served here and never forwarded upstream",
        fix: "remove upstream.tools.whoami (an upstream tool of that name is not served; firelimit's own takes its place)",
      },
    ]);
  });
});

describe('parseUpstreamRate: calls per unit, within bounds', () => {
  it.each([
    ['15/min', { limit: 15, windowMs: 60_000 }],
    ['2 / S', { limit: 2, windowMs: 1000 }],
    ['1/second', { limit: 1, windowMs: 1000 }],
    ['1000/hour', { limit: 1000, windowMs: 3_600_000 }],
    ['5000/d', { limit: 5000, windowMs: 86_400_000 }],
    ['1000000/day', { limit: 1_000_000, windowMs: 86_400_000 }],
    ['1000001/day', undefined],
    ['0/min', undefined],
    ['15/week', undefined],
    ['15', undefined],
    ['-1/min', undefined],
  ])('%s', (text, expected) => {
    expect(parseUpstreamRate(text)).toEqual(expected);
  });
});

describe('upstream.tools: what a refusal says, and what is left out', () => {
  it('a bad tool name: the knob, the field and the fix', () => {
    const result = parseLimitsFile(file({ tools: { 'a/b': { rate: '1/s' } } }), defaults);
    expect(result).toEqual({ ok: false, problems: [{ knob: 'LIMITS_FILE', problem: 'upstream.tools.a/b: expected a tool name (1-128 of A-Z a-z 0-9 _ - .)', fix: 'name the tool exactly as the upstream lists it' }] });
  });

  it('fields the file leaves out are absent, not undefined, so the knobs fill them', () => {
    const result = parseLimitsFile(file({ tools: { search: { rate: '1/s' } } }), defaults);
    expect(result.ok && result.upstreamTools.get('search')).toStrictEqual({ limit: 1, windowMs: 1000 });
  });
});

describe('parseLimitsFile: a name the schema would drop without a word', () => {
  it.each([
    ['a tool quota', '{"upstream":{"tools":{"__proto__":{"rate":"1/s"}}}}', 'upstream.tools.__proto__'],
    ['a tier', '{"tiers":{"__proto__":{"limits":[{"limit":1,"window":"1m"}]}}}', 'tiers.__proto__'],
    ['a cost, inside a list', '{"rules":[{"name":"r","cost":1,"match":{"__proto__":1}}]}', 'rules[0].match.__proto__'],
  ])('"__proto__" naming %s is refused, with its path', (_what, text, path) => {
    expect(parseLimitsFile(text, defaults)).toEqual({ ok: false, problems: [{ knob: 'LIMITS_FILE', problem: `${path}: "__proto__" cannot name a tier, tool or rule`, fix: 'choose another name' }] });
  });
});

describe('upstream.tools: the shared quota\'s name', () => {
  it('a tool quota named "upstream" is refused: answers and metrics name the shared quota so', () => {
    const result = parseLimitsFile(file({ tools: { upstream: { rate: '1/s' } } }), defaults);
    expect(result).toEqual({
      ok: false,
      problems: [{ knob: 'LIMITS_FILE', problem: 'upstream.tools.upstream: "upstream" is the name answers and metrics give the shared quota (UPSTREAM_RATE), so a tool\'s own quota cannot take it', fix: 'set the shared quota with UPSTREAM_RATE, or remove this entry' }],
    });
  });
});
