import { loadConfig } from '../../src/config/config';
import { describeLimits } from '../../src/mcp/resources/limits-resource';

// firelimit://limits publishes what the service enforces: tiers, and since issue 10 and 11 costs, rules and upstream quotas.

const withFile = (env: NodeJS.ProcessEnv, file: unknown) => loadConfig({ ...env, LIMITS_FILE: 'limits.json' }, { cwd: '/srv', readFile: () => JSON.stringify(file) });

describe('describeLimits: the limits resource', () => {
  it('lists costs and rules as the charge middleware applies them', () => {
    const text = describeLimits(withFile({ RATE_LIMIT_TOOL_COSTS: 'whoami=3' }, { rules: [{ name: 'reads', match: { method: 'resources/read' }, limits: [{ limit: 5, window: '1m' }], shadow: true }] }));
    expect(text.calls).toMatchObject({
      costs: [['whoami', 3]],
      free: { limit: 600, windowSeconds: 60 },
      rules: [{ name: 'reads', matches: 'resources/read', shadow: true, limits: [expect.objectContaining({ limit: 5, windowSeconds: 60 })] }],
    });
    expect(text).not.toHaveProperty('upstreamQuotas');
  });

  it('says which requests the shared quota counts, and the tools priced 0 on it, as the limits file sets them', () => {
    const config = withFile({ UPSTREAM_MCP_URL: 'http://internal.example/mcp', UPSTREAM_RATE: '2/s' }, { upstream: { costs: { methods: { 'resources/read': 0 }, tools: { echo: 0 } } } });
    expect(describeLimits(config).upstreamQuotas).toMatchObject({ shared: { counts: ['tools/call', 'prompts/get', 'completion/complete'], toolCosts: { echo: 0 } } });
  });

  it('lists the shared upstream quota and each tool quota with its interval, and never the upstream URL or credential', () => {
    const config = withFile(
      { UPSTREAM_MCP_URL: 'http://internal.example/mcp', UPSTREAM_MCP_AUTHORIZATION: 'Bearer k-secret-77', UPSTREAM_RATE: '15/min', UPSTREAM_DAILY_BUDGET: '900' },
      { upstream: { tools: { search: { rate: '2/s', headroom: 1 } } } },
    );
    const text = describeLimits(config);
    expect(text.upstreamQuotas).toEqual({
      shared: { limit: 15, windowSeconds: 60, headroom: 0.9, intervalMs: 4444, maxWaitMs: 60_000, dailyBudget: 900, maxReservationsPerToken: 3, counts: ['tools/call', 'resources/read', 'prompts/get', 'completion/complete'] },
      // 2/s at headroom 1 with the 1 s grace: 41 slots fit in 60 s, 11 a token.
      tools: { search: { limit: 2, windowSeconds: 1, headroom: 1, intervalMs: 500, maxWaitMs: 60_000, maxReservationsPerToken: 11 } },
    });
    expect(JSON.stringify(text)).not.toMatch(/internal\.example|k-secret-77/);
  });

  it('in front of an upstream without quotas: none listed', () => {
    expect(describeLimits(loadConfig({ UPSTREAM_MCP_URL: 'http://u.example/mcp' })).upstreamQuotas).toEqual({ tools: {} });
  });
});
