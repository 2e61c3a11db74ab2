import { Client, StreamableHTTPClientTransport, type CallToolResult, type Tool } from '@modelcontextprotocol/client';
import { freeLoopbackPort, startEverythingUpstream, type EverythingUpstream } from '../support/everything-upstream';
import { connect, startFirelimit, type RunningFirelimit } from '../support/gateway-harness';
import { GOOD_SECRET } from '../support/mcp-test-app';

jest.setTimeout(60_000);

const staleWarnings = (firelimit: RunningFirelimit): number =>
  firelimit.logger.entries.filter((e) => e.severity === 'WARNING' && e.fields?.event === 'gateway.list_stale' && e.fields?.list === 'tools').length;

describe('with the upstream unreachable, tools/list degrades instead of failing', () => {
  let upstream: EverythingUpstream;

  beforeAll(async () => {
    upstream = await startEverythingUpstream();
  });
  afterAll(async () => {
    await upstream?.close();
  });

  it("lists firelimit's own tools and the upstream's from the last good list, stale once in the log, and the limits can still be asked", async () => {
    // TTL 0: every list asks the upstream, so the outage is met at once.
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_LIST_TTL_MS: '0', UPSTREAM_TIMEOUT_MS: '3000' });
    const client = await connect(firelimit.url);
    try {
      const before = (await client.listTools()).tools.map((t) => t.name);
      expect(before).toEqual(expect.arrayContaining(['rate_limit_status', 'echo', 'gzip-file-as-resource']));
      await upstream.kill();
      const during = (await client.listTools()).tools.map((t) => t.name);
      expect(during).toEqual(before);
      await client.listTools();
      expect(staleWarnings(firelimit)).toBe(1);
      const status = (await client.callTool({ name: 'rate_limit_status', arguments: {} })) as CallToolResult;
      expect(status.isError).not.toBe(true);
      expect((await client.listResources()).resources.map((r) => r.uri)).toContain('firelimit://limits');
      // The upstream's tool is still known: the call is tried and answered as unreachable, not as an unknown tool.
      const echo = (await client.callTool({ name: 'echo', arguments: { message: 'x' } })) as CallToolResult;
      expect(echo.isError).toBe(true);
      expect(JSON.stringify(echo.content)).toMatch(/unreachable/);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.restart();
    }
  });

  it("an upstream never reached since boot: tools/list lists firelimit's own tools only", async () => {
    const deadPort = await freeLoopbackPort();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: `http://127.0.0.1:${deadPort}/mcp`, UPSTREAM_TIMEOUT_MS: '2000' });
    const client = await connect(firelimit.url);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('rate_limit_status');
      expect(names).not.toContain('echo');
      expect((await client.listPrompts()).prompts).toEqual([]);
    } finally {
      await client.close();
      await firelimit.stop();
    }
  });

  it("the 2025-era list keeps every field the upstream gave a tool (server-everything's execution)", async () => {
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url });
    const client = await connect(firelimit.url);
    try {
      const direct = await connect(new URL(upstream.url));
      const upstreamTools = (await direct.listTools()).tools;
      await direct.close();
      const listed = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
      const withExecution = upstreamTools.filter((t) => t.execution !== undefined);
      expect(withExecution.length).toBeGreaterThan(0);
      for (const tool of upstreamTools) expect(listed.get(tool.name)).toEqual(tool);
    } finally {
      await client.close();
      await firelimit.stop();
    }
  });

  it("the 2026-07-28 list keeps every field that revision's Tool has, and no execution: the spec removed it (SEP-2663, ADR 0051)", async () => {
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url });
    // The wire, not the client's parse: the SDK client's 2026 schema would strip an execution field itself.
    const wireTools: Tool[][] = [];
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const sent = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : {};
      if (sent.method === 'tools/list') wireTools.push(((await response.clone().json()) as { result: { tools: Tool[] } }).result.tools);
      return response;
    };
    const client = new Client({ name: 'integrator-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(firelimit.url, { fetch: recording, requestInit: { headers: { Authorization: `Bearer ${GOOD_SECRET}` } } }));
    try {
      const direct = await connect(new URL(upstream.url));
      const upstreamTools = (await direct.listTools()).tools;
      await direct.close();
      expect(upstreamTools.filter((t) => t.execution !== undefined).length).toBeGreaterThan(0);
      const parsed = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
      expect(wireTools).toHaveLength(1);
      const onWire = new Map((wireTools[0] ?? []).map((t) => [t.name, t]));
      for (const { execution: _removed, ...tool } of upstreamTools) {
        expect(onWire.get(tool.name)).toEqual(tool);
        expect(parsed.get(tool.name)).toEqual(tool);
      }
    } finally {
      await client.close();
      await firelimit.stop();
    }
  });
});
