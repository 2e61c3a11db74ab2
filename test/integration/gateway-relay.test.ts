import { Client, LOG_LEVEL_META_KEY, StreamableHTTPClientTransport, type CallToolResult, type LoggingMessageNotification, type Progress } from '@modelcontextprotocol/client';
import { GOOD_SECRET } from '../support/mcp-test-app';
import { connect, startFirelimit, type RunningFirelimit } from '../support/gateway-harness';
import { startStatefulUpstream } from '../support/stateful-upstream-mcp-server';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * A forwarded tools/call that carries `_meta.progressToken` gets the
 * upstream's progress (under the caller's own token) and its log messages
 * for that call on its own response stream, then the result
 * (docs/adr/0038-relaying-upstream-notifications.md). The upstream is a real
 * SDK 2.x server whose `count` tool reports progress and logs each step.
 */

type LogParams = LoggingMessageNotification['params'];

interface Heard {
  readonly progress: Progress[];
  readonly logs: LogParams[];
}

function listen(client: Client): LogParams[] {
  const logs: LogParams[] = [];
  client.setNotificationHandler('notifications/message', (notification) => void logs.push(notification.params));
  return logs;
}

async function count(client: Client, logs: LogParams[], steps: number, label: string, meta?: Record<string, unknown>): Promise<Heard & { readonly result: CallToolResult }> {
  const progress: Progress[] = [];
  const params = { name: 'count', arguments: { steps, label }, ...(meta === undefined ? {} : { _meta: meta }) };
  const result = (await client.callTool(params, { onprogress: (p) => void progress.push(p) })) as CallToolResult;
  return { result, progress, logs: logs.filter((log) => (log.data as { label?: string }).label === label) };
}

/** One raw POST, no handshake (the service is stateless): the status, the content type and the JSON-RPC messages in the body, in order. */
async function post(url: URL, body: unknown, accept: string): Promise<{ status: number; contentType: string; messages: Record<string, unknown>[] }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${GOOD_SECRET}`, 'Content-Type': 'application/json', Accept: accept, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify(body),
  });
  const contentType = response.headers.get('content-type') ?? '';
  const text = await response.text();
  const messages = contentType.startsWith('text/event-stream')
    ? text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>)
    : [JSON.parse(text) as Record<string, unknown>];
  return { status: response.status, contentType, messages };
}

const countCall = (meta: Record<string, unknown> | undefined) => ({
  jsonrpc: '2.0',
  id: 41,
  method: 'tools/call',
  params: { name: 'count', arguments: { steps: 3, label: 'raw' }, ...(meta === undefined ? {} : { _meta: meta }) },
});

describe("the upstream's progress and log messages for a forwarded call reach the caller", () => {
  let upstream: UpstreamStub;
  let firelimit: RunningFirelimit;

  beforeAll(async () => {
    upstream = await startUpstreamStub();
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url });
  });

  afterAll(async () => {
    await firelimit.stop();
    await upstream.close();
  });

  it('an SDK client (2025 handshake) asking for progress hears every step, in order, and the log of each, then the result', async () => {
    const client = await connect(firelimit.url);
    try {
      const heard = await count(client, listen(client), 3, 'legacy');
      expect(heard.result.content).toEqual([{ type: 'text', text: 'legacy counted to 3' }]);
      expect(heard.progress).toEqual([1, 2, 3].map((step) => ({ progress: step, total: 3, message: `legacy ${step}` })));
      expect(heard.logs).toEqual([1, 2, 3].map((step) => ({ level: 'info', logger: 'counter', data: { label: 'legacy', step } })));
    } finally {
      await client.close();
    }
  });

  it("on the wire: an SSE stream whose progress carries the caller's own token, the answer last under the caller's id", async () => {
    const { status, contentType, messages } = await post(firelimit.url, countCall({ progressToken: 'caller-token-7' }), 'application/json, text/event-stream');
    expect(status).toBe(200);
    expect(contentType).toMatch(/^text\/event-stream/);
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    expect(progress.map((m) => m.params)).toEqual([1, 2, 3].map((step) => ({ progressToken: 'caller-token-7', progress: step, total: 3, message: `raw ${step}` })));
    expect(messages.filter((m) => m.method === 'notifications/message')).toHaveLength(3);
    expect(messages.at(-1)).toMatchObject({ id: 41, result: { content: [{ type: 'text', text: 'raw counted to 3' }] } });
    expect(messages.slice(0, -1).every((m) => m.id === undefined)).toBe(true);
    // Upstream, the call went under the gateway client's own token: the caller's is mapped back, never sent on.
    const forwarded = upstream.calls().at(-1)?.progressToken;
    expect(forwarded).toBeDefined();
    expect(forwarded).not.toBe('caller-token-7');
  });

  it('a call without a progressToken is answered with plain JSON and asks the upstream for no progress', async () => {
    const { contentType, messages } = await post(firelimit.url, countCall(undefined), 'application/json, text/event-stream');
    expect(contentType).toMatch(/^application\/json/);
    expect(messages).toEqual([expect.objectContaining({ id: 41, result: expect.objectContaining({ content: [{ type: 'text', text: 'raw counted to 3' }] }) })]);
    expect(upstream.calls().at(-1)?.progressToken).toBeUndefined();
  });

  it('a caller whose Accept has no text/event-stream gets the JSON answer, and the upstream is asked for no progress', async () => {
    const { contentType, messages } = await post(firelimit.url, countCall({ progressToken: 9 }), 'application/json');
    expect(contentType).toMatch(/^application\/json/);
    expect(messages).toEqual([expect.objectContaining({ id: 41, result: expect.objectContaining({ content: [{ type: 'text', text: 'raw counted to 3' }] }) })]);
    expect(upstream.calls().at(-1)?.progressToken).toBeUndefined();
  });

  it('logging/setLevel is accepted, and the next call of a 2025-era caller still hears every level (no level is kept between stateless requests)', async () => {
    const client = await connect(firelimit.url);
    try {
      expect(client.getServerCapabilities()?.logging).toEqual({});
      await expect(client.setLoggingLevel('emergency')).resolves.toEqual({});
      expect((await count(client, listen(client), 2, 'after-set-level')).logs.map((log) => log.level)).toEqual(['info', 'info']);
    } finally {
      await client.close();
    }
  });

  it('two callers at once on the one upstream connection each hear only their own call', async () => {
    const [a, b] = await Promise.all([connect(firelimit.url), connect(firelimit.url)]);
    try {
      const [logsA, logsB] = [listen(a), listen(b)];
      const [heardA, heardB] = await Promise.all([count(a, logsA, 4, 'first'), count(b, logsB, 2, 'second')]);
      expect(heardA.progress.map((p) => p.message)).toEqual(['first 1', 'first 2', 'first 3', 'first 4']);
      expect(heardB.progress.map((p) => p.message)).toEqual(['second 1', 'second 2']);
      expect(logsA.map((log) => (log.data as { label: string }).label)).toEqual(['first', 'first', 'first', 'first']);
      expect(logsB.map((log) => (log.data as { label: string }).label)).toEqual(['second', 'second']);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a client pinned to the 2026-07-28 protocol hears the progress, and log messages only at or above the level its envelope names', async () => {
    const client = await connect(firelimit.url, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    try {
      const logs = listen(client);
      const heard = await count(client, logs, 2, 'modern');
      expect(heard.result.content).toEqual([{ type: 'text', text: 'modern counted to 2' }]);
      expect(heard.progress).toEqual([1, 2].map((step) => ({ progress: step, total: 2, message: `modern ${step}` })));
      // No level in the envelope: no log messages, as the SDK's own ctx.mcpReq.log does from 2026-07-28.
      expect(heard.logs).toEqual([]);
      expect((await count(client, logs, 2, 'modern-info', { [LOG_LEVEL_META_KEY]: 'info' })).logs.map((log) => log.level)).toEqual(['info', 'info']);
      expect((await count(client, logs, 2, 'modern-warning', { [LOG_LEVEL_META_KEY]: 'warning' })).logs).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('a 2026-07-28 client whose Accept has no text/event-stream gets its answer as JSON, and no progress', async () => {
    const contentTypes: string[] = [];
    const jsonOnly: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      if (init?.method === 'POST') headers.set('accept', 'application/json');
      const response = await fetch(input, { ...init, headers });
      contentTypes.push(response.headers.get('content-type') ?? '');
      return response;
    };
    const client = new Client({ name: 'json-only', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(firelimit.url, { fetch: jsonOnly, requestInit: { headers: { Authorization: `Bearer ${GOOD_SECRET}` } } }));
    try {
      const heard = await count(client, listen(client), 2, 'json-only', { [LOG_LEVEL_META_KEY]: 'debug' });
      expect(heard.result.content).toEqual([{ type: 'text', text: 'json-only counted to 2' }]);
      expect(heard.progress).toEqual([]);
      expect(heard.logs).toEqual([]);
      expect(contentTypes.at(-1)).toMatch(/^application\/json/);
      expect(upstream.calls().at(-1)?.progressToken).toBeUndefined();
    } finally {
      await client.close();
    }
  });
});

describe("a session-keeping upstream's log messages outside a call reach no caller", () => {
  it("even when the caller's session (and its standalone stream) was reopened inside a call that asked for progress", async () => {
    const upstream = await startStatefulUpstream();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url });
    const client = await connect(firelimit.url);
    try {
      expect(((await client.callTool({ name: 'echo', arguments: { text: 'first' } })) as CallToolResult).isError).not.toBe(true);
      // The upstream forgets the session (HTTP 404), so the next call opens a new connection (and session) from inside its own request.
      upstream.restart();
      const logs = listen(client);
      const result = (await client.callTool({ name: 'announce', arguments: { label: 'a' } }, { onprogress: () => undefined })) as CallToolResult;
      expect(result.content).toEqual([{ type: 'text', text: 'announced' }]);
      // The shared session (lists), the caller's, and the caller's new one after the restart.
      expect(upstream.sessions).toHaveLength(3);
      expect(upstream.sessions[2]?.standaloneStream?.headersSent).toBe(true);
      expect(logs.map((log) => log.data)).toEqual([{ label: 'a', on: 'call' }]);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });
});
