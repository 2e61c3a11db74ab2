import { loadConfig } from '../../src/config/config';
import { INSPECTOR_OBSERVED } from '../../src/developers/developers-clients';
import { renderDevelopersPage } from '../../src/developers/developers-page';

const page = (env: NodeJS.ProcessEnv): string => renderDevelopersPage(loadConfig(env, { cwd: '/srv' }), { baseUrl: 'https://mcp.example' });

function figure(text: string, name: string): string | undefined {
  return new RegExp(`data-figure="${name}">([^<]*)<`).exec(text)?.[1];
}

describe('/developers explains the shared upstream quota with the configured figures', () => {
  it.each([
    ['15/min', '0.9', undefined, '15 per minute', '4444'],
    ['2/s', '1', '500', '2 per second', '500'],
  ] as const)('UPSTREAM_RATE=%s, headroom %s', (rate, headroom, budget, words, intervalMs) => {
    const text = page({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_RATE: rate, UPSTREAM_HEADROOM: headroom, ...(budget === undefined ? {} : { UPSTREAM_DAILY_BUDGET: budget }) });
    expect(figure(text, 'upstream-rate')).toBe(words);
    expect(figure(text, 'upstream-interval-ms')).toBe(intervalMs);
    expect(figure(text, 'upstream-daily-budget')).toBe(budget);
    expect(text).toContain('"status": "reserved"');
    expect(text).toContain('href="#upstream"');
  });

  it.each([
    ['with UPSTREAM_RATE', { UPSTREAM_RATE: '2/s' }],
    ['without a quota', {}],
  ] as const)('says, %s, how progress reaches a caller and how often the lists are refreshed, with the configured figures', (_, extra) => {
    const text = page({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_TIMEOUT_MS: '7000', UPSTREAM_LIST_TTL_MS: '45000', ...extra });
    expect(text).toContain('id="upstream-progress"');
    expect(text).toContain('<code>progressToken</code>');
    expect(figure(text, 'upstream-timeout-ms')).toBe('7000');
    expect(figure(text, 'upstream-list-ttl-ms')).toBe('45000');
  });

  it('says nothing of an upstream when none is configured', () => {
    const text = page({});
    expect(text).not.toContain('id="upstream"');
    expect(text).not.toContain('href="#upstream"');
  });

  it('never shows the upstream URL or its credential', () => {
    const text = page({ UPSTREAM_MCP_URL: 'http://internal.example:3000/mcp', UPSTREAM_MCP_AUTHORIZATION: 'Bearer k-123456789', UPSTREAM_RATE: '2/s' });
    expect(text).not.toContain('internal.example');
    expect(text).not.toContain('k-123456789');
  });
});

describe("/developers lists each tool's own upstream quota", () => {
  const withFile = (env: NodeJS.ProcessEnv, upstream: unknown): string =>
    renderDevelopersPage(loadConfig({ ...env, LIMITS_FILE: 'limits.json' }, { cwd: '/srv', readFile: () => JSON.stringify({ upstream }) }), { baseUrl: 'https://mcp.example' });

  it('beside the shared quota: a row per tool with its rate and interval, and the quota field explained', () => {
    const text = withFile({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_RATE: '2/s' }, { tools: { search: { rate: '15/min', headroom: 0.75 }, 'files.read': { rate: '1/s', headroom: 1, dailyBudget: 500 } } });
    expect(figure(text, 'upstream-rate')).toBe('2 per second');
    expect(figure(text, 'tool-quota-rate-search')).toBe('15 per minute');
    expect(figure(text, 'tool-quota-interval-ms-search')).toBe('5333');
    expect(figure(text, 'tool-quota-interval-ms-files.read')).toBe('1000');
    expect(text).toContain('<td>500</td>');
    expect(text).toContain('needs a slot on its own quota and on the shared one');
    expect(text).toContain('"quota": …');
  });

  it('without UPSTREAM_RATE: the tools\' quotas alone, and no shared figures', () => {
    const text = withFile({ UPSTREAM_MCP_URL: 'http://u.example/mcp' }, { tools: { search: { rate: '15/min' } } });
    expect(text).toContain('<h2 id="upstream">Upstream quotas</h2>');
    expect(figure(text, 'upstream-rate')).toBeUndefined();
    expect(figure(text, 'tool-quota-interval-ms-search')).toBe('4444');
  });
});

describe('/developers in gateway mode tells the truth (issue 17 item 8)', () => {
  const render = (env: NodeJS.ProcessEnv, upstreamTools?: readonly { name: string; description?: string }[]): string =>
    renderDevelopersPage(loadConfig(env, { cwd: '/srv' }), { baseUrl: 'https://mcp.example', ...(upstreamTools === undefined ? {} : { upstreamTools }) });

  it("lists the upstream's tools from the last list, each with its cost (configured, or 1)", () => {
    const text = render({ UPSTREAM_MCP_URL: 'http://u.example/mcp', RATE_LIMIT_TOOL_COSTS: 'search=5' }, [
      { name: 'search', description: 'Searches.\nSecond line.' },
      { name: 'echo', description: 'Echoes back the input string' },
    ]);
    expect(figure(text, 'upstream-tool-cost-search')).toBe('5');
    expect(figure(text, 'upstream-tool-cost-echo')).toBe('1');
    expect(text).toContain('Echoes back the input string');
    expect(text).not.toContain('Second line.');
  });

  it('says what the gateway isolates per token and what every token shares', () => {
    const text = render({ UPSTREAM_MCP_URL: 'http://u.example/mcp' });
    expect(text).toContain('id="upstream-isolation"');
    expect(text).toContain("a session of your token's own");
    expect(text).toContain('lists are the same for every token');
  });

  it('with UPSTREAM_LISTS=per-caller: the lists are the token\'s own, and no one caller\'s tools are named', () => {
    const text = render({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_LISTS: 'per-caller' }, [{ name: 'echo', description: 'Echoes back the input string' }]);
    expect(text).toMatch(/lists you get are your token(&#39;|&#x27;|')s own/);
    expect(text).not.toContain('lists are the same for every token');
    expect(text).not.toContain('Echoes back the input string');
    expect(text).toContain('lists its tools to each token in its own session');
  });

  it('says when the upstream has not listed its tools yet', () => {
    expect(render({ UPSTREAM_MCP_URL: 'http://u.example/mcp' })).toContain('has not listed its tools to this instance yet');
  });

  it('escapes what the upstream says of its tools', () => {
    const text = render({ UPSTREAM_MCP_URL: 'http://u.example/mcp' }, [{ name: '<b>x</b>', description: '<script>alert(1)</script>' }]);
    expect(text).not.toContain('<script>alert(1)');
    expect(text).not.toContain('<b>x</b>');
  });

  it.each([
    ['memory', {}, 'on each instance'],
    ['redis', { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://127.0.0.1:6379' }, 'across every instance'],
  ] as const)('on the %s backend says where the upstream quota holds', (_backend, env, words) => {
    const text = render({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_RATE: '2/s', ...env });
    expect(figure(text, 'upstream-quota-scope')).toBe(words);
  });

  it('on the sqlite backend says the upstream quota holds across the processes of one host, not across hosts', () => {
    // The page is rendered from the configuration alone: whether this runtime has node:sqlite does not matter here.
    const config = loadConfig({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_RATE: '2/s', RATE_LIMIT_BACKEND: 'sqlite' }, { cwd: '/srv', hasNodeSqlite: () => true });
    const text = renderDevelopersPage(config, { baseUrl: 'https://mcp.example' });
    expect(figure(text, 'upstream-quota-scope')).toBe('across every process on this host');
    expect(text).toContain('so N hosts can send N times that');
  });

  it('states the real bound of a forwarded call: its hold for a slot, then the upstream timeout', () => {
    const text = render({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_RATE: '2/s', UPSTREAM_HOLD_MS: '1500', UPSTREAM_TIMEOUT_MS: '3000' });
    expect(figure(text, 'upstream-call-bound-ms')).toBe('4500');
    expect(figure(text, 'upstream-timeout-ms')).toBe('3000');
  });
});

describe('/developers says which requests the shared upstream quota counts', () => {
  const withCosts = (costs: unknown): string =>
    renderDevelopersPage(loadConfig({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_RATE: '2/s', LIMITS_FILE: 'limits.json' }, { cwd: '/srv', readFile: () => JSON.stringify({ upstream: { costs } }) }), { baseUrl: 'https://mcp.example' });
  it.each([
    ['by default every forwarded request', {}, 'tools/call, resources/read, prompts/get, completion/complete'],
    ['without the reads the limits file prices 0', { methods: { 'resources/read': 0 } }, 'tools/call, prompts/get, completion/complete'],
  ] as const)('%s', (_what, costs, counted) => {
    const text = withCosts(costs);
    expect(figure(text, 'upstream-counted-methods')).toBe(counted);
    expect(text).toContain('_meta["firelimit/upstreamQuota"]');
  });

  it('says what the Inspector CLI does with a quota answer, from the observed exit code', () => {
    expect(withCosts({}).replace(/\s+/g, ' ')).toContain(
      `MCP Inspector CLI ${INSPECTOR_OBSERVED.version} prints such an answer whole and exits with code ${INSPECTOR_OBSERVED.toolErrorExitCode}, <code>${INSPECTOR_OBSERVED.toolErrorCode}</code>`,
    );
  });

  it('names the tools priced 0', () => {
    expect(withCosts({ tools: { echo: 0 } })).toContain('so do calls to <code>echo</code>, which the upstream does not count');
  });
});

describe("/developers states a token's fair share of the waiting slots", () => {
  it.each([
    ['2/s at the defaults: a quarter of the 39 slots within 60 s', {}, '10'],
    ['15/min: a quarter of 12', { UPSTREAM_RATE: '15/min' }, '3'],
    ['as UPSTREAM_MAX_RESERVATIONS_PER_TOKEN sets it', { UPSTREAM_MAX_RESERVATIONS_PER_TOKEN: '4' }, '4'],
  ] as const)('%s', (_what, extra, perToken) => {
    const text = page({ UPSTREAM_MCP_URL: 'http://u.example/mcp', UPSTREAM_RATE: '2/s', ...extra });
    expect(figure(text, 'upstream-reservations-per-token')).toBe(perToken);
    expect(text).toContain('"firelimit/reservation"');
  });
});
