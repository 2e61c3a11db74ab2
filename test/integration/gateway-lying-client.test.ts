import type { CallToolResult } from '@modelcontextprotocol/client';
import { TOKEN_ID_HEADER } from '../../src/gateway/upstream-client';
import { connect, startFirelimit, textOf, type RunningFirelimit } from '../support/gateway-harness';
import { GOOD_SECRET, TEST_TOKEN } from '../support/mcp-test-app';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * An integrator with a valid token who lies in what it sends: forged
 * attribution headers, `_meta` that tries to reach the upstream, a progress
 * token that is an object, arguments too large or too deep. What reaches the
 * upstream is built by firelimit: its credential, the caller's real public
 * id, the caller's arguments, nothing else of the caller's.
 */

const CREDENTIAL = 'Bearer up_cred_lying_client_61b0';

interface Answer {
  readonly status: number;
  readonly contentType: string;
  /** The JSON-RPC messages of the body: the JSON body, or each SSE event's data. */
  readonly messages: { id?: unknown; result?: CallToolResult; error?: { code: number; message: string }; method?: string; params?: unknown }[];
}

/** A raw POST to firelimit's /mcp (2025 era, stateless): what an integrator can send that the SDK client would not. */
async function post(firelimit: RunningFirelimit, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(firelimit.url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${GOOD_SECRET}`,
      Accept: 'application/json, text/event-stream',
      'Content-Type': 'application/json',
      'MCP-Protocol-Version': '2025-06-18',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  const datas = contentType.startsWith('text/event-stream') ? text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)) : text === '' ? [] : [text];
  return { status: response.status, contentType, messages: datas.map((data) => JSON.parse(data) as Answer['messages'][number]) };
}

const echo = (text: unknown, params: Record<string, unknown> = {}): unknown => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text }, ...params } });

describe('a client that lies, in front of a real upstream', () => {
  let upstream: UpstreamStub;
  let firelimit: RunningFirelimit;

  beforeAll(async () => {
    upstream = await startUpstreamStub();
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_MCP_AUTHORIZATION: CREDENTIAL, UPSTREAM_TIMEOUT_MS: '3000' });
  });

  afterAll(async () => {
    await firelimit.stop();
    await upstream.close();
  });

  it(`cannot set or override ${TOKEN_ID_HEADER}, Authorization or the session upstream by sending them itself`, async () => {
    const before = upstream.hits.length;
    const answer = await post(firelimit, echo('forged'), { [TOKEN_ID_HEADER]: 'tok_admin', 'X-Forwarded-For': '10.0.0.1', 'Mcp-Session-Id': 'stolen-session', 'X-Upstream-Key': 'mine' });
    expect(answer.messages[0]?.result?.structuredContent).toEqual({ echoed: 'forged' });
    const sent = upstream.hits.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    for (const hit of sent) {
      expect(hit.headers.authorization).toBe(CREDENTIAL);
      expect(hit.headers['mcp-session-id']).not.toBe('stolen-session');
      expect(hit.headers['x-forwarded-for']).toBeUndefined();
      expect(hit.headers['x-upstream-key']).toBeUndefined();
      expect(JSON.stringify(hit)).not.toContain(GOOD_SECRET);
      expect(JSON.stringify(hit)).not.toContain('tok_admin');
    }
    expect(upstream.calls().at(-1)?.headers[TOKEN_ID_HEADER.toLowerCase()]).toBe(TEST_TOKEN.id);
  });

  it('cannot pass anything upstream through _meta: the upstream sees no _meta of the caller', async () => {
    const before = upstream.calls().length;
    const meta = { headers: { authorization: 'Bearer evil' }, [TOKEN_ID_HEADER]: 'tok_admin', 'x-firelimit-token-id': 'tok_admin', authorization: 'Bearer evil' };
    const answer = await post(firelimit, echo('meta', { _meta: meta }));
    expect(answer.messages.at(-1)?.result?.structuredContent).toEqual({ echoed: 'meta' });
    const [call] = upstream.calls().slice(before);
    expect(JSON.stringify(call)).not.toContain('evil');
    expect(JSON.stringify(call)).not.toContain('tok_admin');
    expect(call?.headers[TOKEN_ID_HEADER.toLowerCase()]).toBe(TEST_TOKEN.id);
  });

  it('a progress token that is an object is refused as an invalid request (-32600), before anything is forwarded', async () => {
    const before = upstream.calls().length;
    const answer = await post(firelimit, echo('object token', { _meta: { progressToken: { $ne: null, toString: 'x' } } }));
    expect(answer.messages.at(-1)?.error?.code).toBe(-32600);
    expect(upstream.calls().length).toBe(before);
  });

  it('arguments past MAX_BODY_BYTES are refused with 413 and a reason, never forwarded', async () => {
    const before = upstream.calls().length;
    const answer = await post(firelimit, echo('x'.repeat(2 * 1024 * 1024)));
    expect(answer.status).toBe(413);
    expect(answer.messages[0]?.error?.message).toMatch(/larger than \d+ bytes/);
    expect(upstream.calls().length).toBe(before);
  });

  it('arguments nested 100 000 deep (200 kB, under MAX_BODY_BYTES) are refused with 400 too_deep, never forwarded, and other callers run on', async () => {
    const deep = `${'['.repeat(100_000)}1${']'.repeat(100_000)}`;
    const client = await connect(firelimit.url);
    try {
      const slow = client.callTool({ name: 'slow', arguments: { waitMs: 300 } });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const before = upstream.calls().length;
      const answer = await post(firelimit, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":${deep}}}}`);
      expect(answer.status).toBe(400);
      expect(answer.messages[0]?.error).toMatchObject({ code: -32600, data: { reason: 'too_deep' } });
      expect(upstream.calls().filter((hit) => hit.tool === 'echo').length).toBe(upstream.calls().slice(0, before).filter((hit) => hit.tool === 'echo').length);
      expect(textOf((await slow) as CallToolResult)).toBe('waited 300 ms');
    } finally {
      await client.close();
    }
  });

  it('a __proto__ key in the arguments is passed on as data and pollutes nothing in firelimit', async () => {
    const before = upstream.calls().length;
    const answer = await post(firelimit, '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"p","__proto__":{"polluted":"yes"}}}}');
    expect(answer.messages.at(-1)?.result).toBeDefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(upstream.calls().length).toBe(before + 1);
  });

  it("a notifications/cancelled naming request ids cancels no other caller's call on the shared server, nor reaches the upstream", async () => {
    // A fresh firelimit: the shared server's own request ids start at 1, so ids 0-49 include the victim's.
    const fresh = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_MCP_AUTHORIZATION: CREDENTIAL });
    const client = await connect(fresh.url);
    try {
      const before = upstream.hits.length;
      const victim = client.callTool({ name: 'slow', arguments: { waitMs: 500 } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const acks = await Promise.all(
        Array.from({ length: 50 }, (_, requestId) => post(fresh, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'mine now' } })),
      );
      expect(acks.map((ack) => ack.status)).toEqual(Array.from({ length: 50 }, () => 202));
      expect(textOf((await victim) as CallToolResult)).toBe('waited 500 ms');
      expect(upstream.hits.slice(before).filter((hit) => hit.method === 'notifications/cancelled')).toEqual([]);
    } finally {
      await client.close();
      await fresh.stop();
    }
  });

  it('the log never holds the integrator secret or the upstream credential', () => {
    const logged = JSON.stringify(firelimit.logger.entries);
    expect(logged).not.toContain(GOOD_SECRET);
    expect(logged).not.toContain('up_cred_lying_client_61b0');
  });
});
