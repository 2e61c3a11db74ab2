import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startEverythingUpstream, startRecordingProxy, type EverythingUpstream, type RecordingProxy } from '../support/everything-upstream';
import { startFirelimit, type RunningFirelimit } from '../support/gateway-harness';
import { GOOD_SECRET } from '../support/mcp-test-app';

/**
 * Issue 17 item 5: a "reserved" or "rejected" answer for a tool with an
 * outputSchema must not break a client that validates structuredContent
 * against it. The SDK 1.x client does (it threw -32602 "Structured content
 * does not match the tool's output schema" before), in front of
 * server-everything's get-structured-content, which has such a schema.
 */

const TOOL = { name: 'get-structured-content', arguments: { location: 'Chicago' } };
const QUOTA_META = 'firelimit/upstreamQuota';

describe('the SDK 1.x client and a quota answer for a tool with an outputSchema', () => {
  let everything: EverythingUpstream;
  let proxy: RecordingProxy;
  let firelimit: RunningFirelimit;
  let client: ClientV1;

  beforeAll(async () => {
    everything = await startEverythingUpstream();
    proxy = await startRecordingProxy(everything.url);
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_RATE: '1/min', UPSTREAM_HOLD_MS: '0', UPSTREAM_MAX_WAIT_MS: '90000' });
    client = new ClientV1({ name: 'v1-integrator', version: '1.0.0' });
    await client.connect(new TransportV1(firelimit.url, { requestInit: { headers: { Authorization: `Bearer ${GOOD_SECRET}` } } }));
    const listed = (await client.listTools()).tools.find((tool) => tool.name === TOOL.name);
    expect(listed?.outputSchema).toBeDefined();
  }, 30_000);

  afterAll(async () => {
    await client?.close();
    await firelimit?.stop();
    await proxy?.close();
    await everything?.close();
  });

  it('runs the first call, then answers "reserved" with the slot readable in _meta, and the client does not throw', async () => {
    const first = await client.callTool(TOOL);
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({ conditions: expect.any(String) });

    const before = Date.now();
    const second = await client.callTool(TOOL);
    expect(second.isError).toBe(true);
    expect(second.structuredContent).toBeUndefined();
    const figures = (second._meta as Record<string, { status: string; slotAtMs: number; retryAfterMs: number; quota: string }>)[QUOTA_META];
    expect(figures).toMatchObject({ status: 'reserved', quota: 'upstream' });
    // 1/min at the default headroom 0.9: the next slot is 66 667 ms after the first call.
    expect(figures?.slotAtMs).toBeGreaterThan(before + 60_000);
    expect(figures?.retryAfterMs).toBeGreaterThan(60_000);
    const text = (second.content as { type: string; text: string }[])[0]?.text ?? '';
    expect(text).toContain(`A slot is reserved for you at ${new Date(figures?.slotAtMs ?? 0).toISOString()}`);
    expect(proxy.messages.filter((m) => m.method === 'tools/call')).toHaveLength(1);
  });
});
