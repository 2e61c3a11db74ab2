import { parseLimitsFile } from '../../src/config/limits-file';
import { sharedUpstreamCostOf, type UpstreamCosts } from '../../src/config/upstream-costs';

// The limits file's `upstream.costs`: what a forwarded request costs on the shared upstream quota.

const defaults = { algorithm: 'fixed-window' as const };
const file = (costs: unknown): string => JSON.stringify({ upstream: { costs } });

function problemsOf(costs: unknown): string[] {
  const result = parseLimitsFile(file(costs), defaults);
  if (result.ok) throw new Error('expected the file to be refused');
  return result.problems.map((p) => `${p.problem} | ${p.fix}`);
}

describe('parseLimitsFile: upstream.costs, each problem naming its field and the remedy', () => {
  it.each([
    ['a cost of 2 (weighted costs are not built)', { methods: { 'resources/read': 2 } }, 'upstream.costs.methods.resources/read: expected 0 (the upstream does not count it) or 1'],
    ['a cost given as a string', { tools: { echo: '0' } }, 'upstream.costs.tools.echo: expected 0'],
    ['a list method, which is served from the cache', { methods: { 'tools/list': 0 } }, 'upstream.costs.methods.tools/list: not a request firelimit forwards upstream | name one of tools/call, resources/read, prompts/get, completion/complete'],
    ['a tool name with a space', { tools: { 'web search': 0 } }, 'upstream.costs.tools.web search: expected a tool name'],
    ['an unknown field', { method: {} }, 'upstream.costs: unknown field "method"'],
  ])('%s', (_what, costs, expected) => {
    const problems = problemsOf(costs);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(expected);
  });

  it('reads methods and tools, 0 and 1', () => {
    const result = parseLimitsFile(file({ methods: { 'resources/read': 0, 'prompts/get': 1 }, tools: { echo: 0 } }), defaults);
    expect(result.ok && result.upstreamCosts).toEqual({ methods: new Map([['resources/read', 0], ['prompts/get', 1]]), tools: new Map([['echo', 0]]) });
  });
});

describe('sharedUpstreamCostOf', () => {
  const costs: UpstreamCosts = { methods: new Map([['resources/read', 0], ['tools/call', 0]]), tools: new Map([['echo', 1], ['free', 0]]) };
  const none: UpstreamCosts = { methods: new Map(), tools: new Map() };
  it.each([
    ['every forwarded request costs 1 by default', none, 'prompts/get', undefined, 1],
    ['completion/complete too', none, 'completion/complete', undefined, 1],
    ['a tool call, by default', none, 'tools/call', 'echo', 1],
    ['a method set to 0', costs, 'resources/read', undefined, 0],
    ["a tool's own entry wins over tools/call's", costs, 'tools/call', 'echo', 1],
    ["tools/call's entry for a tool with none", costs, 'tools/call', 'other', 0],
    ['a tool set to 0', { ...none, tools: new Map([['free', 0]]) } as UpstreamCosts, 'tools/call', 'free', 0],
    ['a tool entry does not price another method', { ...none, tools: new Map([['free', 0]]) } as UpstreamCosts, 'prompts/get', 'free', 1],
  ] as const)('%s', (_what, table, method, tool, expected) => {
    expect(sharedUpstreamCostOf(table, method, tool)).toBe(expected);
  });
});
