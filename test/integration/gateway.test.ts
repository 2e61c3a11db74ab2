import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { TOKEN_ID_HEADER } from '../../src/gateway/upstream-client';
import { connect, startFirelimit, textOf, type RunningFirelimit } from '../support/gateway-harness';
import { GOOD_SECRET, TEST_TOKEN } from '../support/mcp-test-app';
import { formatReservationId } from '../../src/gateway/reservation-id';
import { startUpstreamStub, UPSTREAM_TOOL_ANNOTATIONS, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * firelimit in front of a real SDK 2.x MCP server, composed by buildService
 * from environment variables, driven by the SDK 2.x client over sockets.
 */

const UPSTREAM_CREDENTIAL = 'Bearer up_cred_7c1d9e2f5a';

type Running = RunningFirelimit;

describe('firelimit in front of an MCP server (UPSTREAM_MCP_URL)', () => {
  let upstream: UpstreamStub;
  let firelimit: Running;
  let client: Client;

  beforeAll(async () => {
    upstream = await startUpstreamStub();
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_MCP_AUTHORIZATION: UPSTREAM_CREDENTIAL, UPSTREAM_TIMEOUT_MS: '400' });
    client = await connect(firelimit.url);
  });

  afterAll(async () => {
    await client.close();
    await firelimit.stop();
    await upstream.close();
  });

  it("lists the upstream's tools exactly as the upstream lists them, after firelimit's own", async () => {
    const direct = new Client({ name: 'direct', version: '1.0.0' });
    await direct.connect(new StreamableHTTPClientTransport(new URL(upstream.url), { requestInit: { headers: { 'X-Test-Direct': '1' } } }));
    const upstreamTools = (await direct.listTools()).tools;
    await direct.close();

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['rate_limit_status', 'whoami', ...upstreamTools.map((tool) => tool.name)]);
    for (const tool of upstreamTools) expect(tools.find((t) => t.name === tool.name)).toEqual(tool);
    const echo = tools.find((tool) => tool.name === 'echo');
    expect(echo?.annotations).toEqual(UPSTREAM_TOOL_ANNOTATIONS);
    expect(echo?.outputSchema).toMatchObject({ type: 'object', properties: { echoed: { type: 'string' } } });
  });

  it('forwards tools/call with the configured credential and the public token id, never the integrator secret', async () => {
    const before = upstream.hits.length;
    const result = (await client.callTool({ name: 'echo', arguments: { text: 'hi there' } })) as CallToolResult;
    expect(result.isError).not.toBe(true);
    expect(result.structuredContent).toEqual({ echoed: 'hi there' });
    const call = upstream.calls().at(-1);
    expect(call?.args).toEqual({ text: 'hi there' });
    expect(call?.headers.authorization).toBe(UPSTREAM_CREDENTIAL);
    expect(call?.headers[TOKEN_ID_HEADER.toLowerCase()]).toBe(TEST_TOKEN.id);
    // Written by firelimit's forwarder over its pool (ADR 0065), not by the SDK client, whose ids count from 0.
    expect(call?.id).toBeGreaterThanOrEqual(1_000_000_000_000);
    expect(upstream.hits.filter((hit) => hit.method === 'tools/list').every((hit) => Number(hit.id) < 1_000_000)).toBe(true);
    expect(upstream.hits.length).toBeGreaterThan(before);
    for (const hit of upstream.hits.filter((h) => h.headers['x-test-direct'] === undefined)) {
      expect(JSON.stringify(hit)).not.toContain(GOOD_SECRET);
      expect(hit.headers.authorization).toBe(UPSTREAM_CREDENTIAL);
    }
  });

  it("still serves firelimit's own tools, answered by firelimit", async () => {
    const before = upstream.calls().length;
    const result = (await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult;
    expect(result.structuredContent).toMatchObject({ tokenId: TEST_TOKEN.id });
    expect(upstream.calls().length).toBe(before);
  });

  it("forwards resources and prompts, beside firelimit's limits resource", async () => {
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(['firelimit://limits', 'upstream://readme']);
    const read = await client.readResource({ uri: 'upstream://readme' });
    expect(read.contents[0]).toMatchObject({ uri: 'upstream://readme', text: 'hello from upstream' });
    const limits = await client.readResource({ uri: 'firelimit://limits' });
    expect(JSON.parse((limits.contents[0] as { text: string }).text)).toMatchObject({ backend: 'memory' });
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(['greet']);
    const prompt = await client.getPrompt({ name: 'greet', arguments: { who: 'Ada' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'Say hello to Ada.' });
  });

  it('answers an unknown tool with a JSON-RPC error, not a forward', async () => {
    const before = upstream.calls().length;
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/no_such_tool not found/);
    expect(upstream.calls().length).toBe(before);
  });

  it("passes the upstream tool's own error result on without inventing one", async () => {
    const result = (await client.callTool({ name: 'explode', arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
  });

  it('gives a slow upstream a tool error naming UPSTREAM_TIMEOUT_MS, not a hang', async () => {
    const startedAtMs = Date.now();
    const result = (await client.callTool({ name: 'slow', arguments: { waitMs: 1500 } })) as CallToolResult;
    expect(Date.now() - startedAtMs).toBeLessThan(1400);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('did not answer within 400 ms');
    // The connection is reopened: the next call works.
    const next = (await client.callTool({ name: 'echo', arguments: { text: 'again' } })) as CallToolResult;
    expect(next.structuredContent).toEqual({ echoed: 'again' });
  });

  it('serves the same through a client pinned to the 2026-07-28 protocol (the pooled servers)', async () => {
    const modern = new Client({ name: 'integrator-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await modern.connect(new StreamableHTTPClientTransport(firelimit.url, { requestInit: { headers: { Authorization: `Bearer ${GOOD_SECRET}` } } }));
    try {
      expect((await modern.listTools()).tools.map((t) => t.name)).toContain('echo');
      const result = (await modern.callTool({ name: 'echo', arguments: { text: 'modern' } })) as CallToolResult;
      expect(result.structuredContent).toEqual({ echoed: 'modern' });
      expect(upstream.calls().at(-1)?.headers[TOKEN_ID_HEADER.toLowerCase()]).toBe(TEST_TOKEN.id);
    } finally {
      await modern.close();
    }
  });

  it('never logs the upstream credential or the integrator secret', () => {
    const logged = JSON.stringify(firelimit.logger.entries);
    expect(logged).not.toContain('up_cred_7c1d9e2f5a');
    expect(logged).not.toContain(GOOD_SECRET);
  });
});

describe("the upstream's lists are cached for UPSTREAM_LIST_TTL_MS", () => {
  it('serves a tool added upstream only once the TTL has passed', async () => {
    let nowMs = Date.UTC(2026, 11, 1, 12);
    const upstream = await startUpstreamStub();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_LIST_TTL_MS: '60000' }, { clock: () => nowMs });
    const client = await connect(firelimit.url);
    try {
      const names = async () => (await client.listTools()).tools.map((t) => t.name);
      expect(await names()).not.toContain('added_later');
      upstream.extraTools.push('added_later');
      nowMs += 59_999;
      expect(await names()).not.toContain('added_later');
      nowMs += 1;
      expect(await names()).toContain('added_later');
      const called = (await client.callTool({ name: 'added_later', arguments: {} })) as CallToolResult;
      expect(textOf(called)).toBe('added_later');
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });
});

describe('an upstream that is down', () => {
  it("boots, then lists only firelimit's own tools (issue 17: degrade, don't vanish) and calls with a tool error that says unreachable, fast", async () => {
    const stub = await startUpstreamStub();
    const deadUrl = stub.url;
    await stub.close();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: deadUrl, UPSTREAM_MCP_AUTHORIZATION: UPSTREAM_CREDENTIAL, UPSTREAM_TIMEOUT_MS: '1000' });
    const client = await connect(firelimit.url);
    try {
      const startedAtMs = Date.now();
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('whoami');
      expect(tools.map((tool) => tool.name)).not.toContain('echo');
      expect(Date.now() - startedAtMs).toBeLessThan(2000);
      const warning = firelimit.logger.entries.find((entry) => entry.fields?.event === 'gateway.list_stale');
      expect(warning?.fields).toMatchObject({ list: 'tools', kind: 'unreachable' });
      expect(JSON.stringify(warning)).not.toContain(deadUrl);
      // firelimit's own tools still answer.
      const own = (await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult;
      expect(own.isError).not.toBe(true);
      expect(JSON.stringify(firelimit.logger.entries)).not.toContain('up_cred_7c1d9e2f5a');
    } finally {
      await client.close();
      await firelimit.stop();
    }
  });
});

describe('without UPSTREAM_MCP_URL', () => {
  it('serves only its own tools, as before', async () => {
    const firelimit = await startFirelimit({});
    const client = await connect(firelimit.url);
    try {
      expect(firelimit.service.gateway).toBeUndefined();
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['rate_limit_status', 'whoami']);
    } finally {
      await client.close();
      await firelimit.stop();
    }
  });
});

describe('costs and rules for upstream tools', () => {
  it('a cost naming an upstream tool applies to its calls, refused before forwarding; without UPSTREAM_MCP_URL the same name stops the boot', async () => {
    await expect(startFirelimit({ RATE_LIMIT_TOOL_COSTS: 'echo=5' })).rejects.toThrow(/no tool is named "echo"/);
    const upstream = await startUpstreamStub();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, RATE_LIMIT_PER_MINUTE: '12', RATE_LIMIT_TOOL_COSTS: 'echo=5' });
    const client = await connect(firelimit.url);
    try {
      const remaining = async (): Promise<number> => {
        const status = (await client.callTool({ name: 'rate_limit_status', arguments: {} })) as CallToolResult;
        return (status.structuredContent as { remaining: number }).remaining;
      };
      expect(await remaining()).toBe(12);
      await client.callTool({ name: 'echo', arguments: { text: 'one' } });
      expect(await remaining()).toBe(7);
      await client.callTool({ name: 'echo', arguments: { text: 'two' } });
      expect(await remaining()).toBe(2);
      // A third costs 5 of the 2 left: refused by firelimit, never forwarded.
      const before = upstream.calls().length;
      await expect(client.callTool({ name: 'echo', arguments: { text: 'three' } })).rejects.toThrow();
      expect(upstream.calls().length).toBe(before);
      expect(firelimit.logger.entries.some((entry) => entry.fields?.event === 'config.upstream_tool_policies')).toBe(true);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });
});

describe('the shared upstream quota in front of tools/call (UPSTREAM_RATE)', () => {
  it('runs the first call, answers the next "reserved" with its slot, and runs it when the caller comes back at the slot', async () => {
    let nowMs = Date.UTC(2026, 11, 1, 12, 0, 0);
    const upstream = await startUpstreamStub();
    const firelimit = await startFirelimit(
      { UPSTREAM_MCP_URL: upstream.url, UPSTREAM_RATE: '2/s', UPSTREAM_HEADROOM: '1', UPSTREAM_HOLD_MS: '0' },
      { clock: () => nowMs },
    );
    const client = await connect(firelimit.url);
    try {
      const first = (await client.callTool({ name: 'echo', arguments: { text: 'one' } })) as CallToolResult;
      expect(first.structuredContent).toEqual({ echoed: 'one' });
      const second = (await client.callTool({ name: 'echo', arguments: { text: 'two' } })) as CallToolResult;
      expect(second.isError).toBe(true);
      // echo has an outputSchema: the figures ride in _meta only, so a validating client can read them.
      expect(second.structuredContent).toBeUndefined();
      expect(second._meta?.['firelimit/upstreamQuota']).toEqual({ status: 'reserved', retryAfterMs: 500, slotAtMs: nowMs + 500, quota: 'upstream', reservation: formatReservationId({ key: 'upstream', slotAtMs: nowMs + 500 }) });
      expect(textOf(second)).toContain('again in 1 s');
      expect(upstream.calls().map((c) => c.args)).toEqual([{ text: 'one' }]);
      nowMs += 500;
      const back = (await client.callTool({ name: 'echo', arguments: { text: 'two' } })) as CallToolResult;
      expect(back.structuredContent).toEqual({ echoed: 'two' });
      expect(upstream.calls().map((c) => c.args)).toEqual([{ text: 'one' }, { text: 'two' }]);
      const metrics = await firelimit.service.metrics.registry.metrics();
      expect(metrics).toMatch(/firelimit_upstream_quota_answers_total\{answer="reserved",quota="upstream"\} 1/);
      expect(metrics).toMatch(/firelimit_upstream_calls_total\{outcome="ok"\} 2/);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });

  it('holds a call whose slot is within UPSTREAM_HOLD_MS and runs it at its slot', async () => {
    let nowMs = Date.UTC(2026, 11, 1, 12, 0, 0);
    const slept: number[] = [];
    const upstream = await startUpstreamStub(() => nowMs);
    const firelimit = await startFirelimit(
      { UPSTREAM_MCP_URL: upstream.url, UPSTREAM_RATE: '2/s', UPSTREAM_HEADROOM: '1', UPSTREAM_HOLD_MS: '1000' },
      { clock: () => nowMs, sleep: async (ms) => void (slept.push(ms), (nowMs += ms)) },
    );
    const client = await connect(firelimit.url);
    try {
      await client.callTool({ name: 'echo', arguments: { text: 'one' } });
      const held = (await client.callTool({ name: 'echo', arguments: { text: 'two' } })) as CallToolResult;
      expect(held.structuredContent).toEqual({ echoed: 'two' });
      expect(slept).toEqual([500]);
      const [a, b] = upstream.calls().map((c) => c.atMs);
      expect((b as number) - (a as number)).toBeGreaterThanOrEqual(500);
      expect(await firelimit.service.metrics.registry.metrics()).toMatch(/firelimit_upstream_quota_answers_total\{answer="held",quota="all"\} 1/);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });

  it('rejects past UPSTREAM_MAX_WAIT_MS with status "rejected" and a retryAfterMs', async () => {
    const nowMs = Date.UTC(2026, 11, 1, 12, 0, 0);
    const upstream = await startUpstreamStub();
    const firelimit = await startFirelimit(
      { UPSTREAM_MCP_URL: upstream.url, UPSTREAM_RATE: '1/min', UPSTREAM_HEADROOM: '1', UPSTREAM_HOLD_MS: '0', UPSTREAM_MAX_WAIT_MS: '1000' },
      { clock: () => nowMs },
    );
    const client = await connect(firelimit.url);
    try {
      await client.callTool({ name: 'echo', arguments: { text: 'one' } });
      const refused = (await client.callTool({ name: 'echo', arguments: { text: 'two' } })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(refused._meta?.['firelimit/upstreamQuota']).toMatchObject({ status: 'rejected', reason: 'max_wait' });
      expect((refused._meta?.['firelimit/upstreamQuota'] as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
      expect(upstream.calls()).toHaveLength(1);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });
});
