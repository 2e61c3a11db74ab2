import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { startEverythingUpstream, startRecordingProxy, type EverythingUpstream, type RecordingProxy } from '../support/everything-upstream';
import { connect, startFirelimit, textOf, type RunningFirelimit } from '../support/gateway-harness';
import { TEST_TOKEN } from '../support/mcp-test-app';

jest.setTimeout(60_000);

const SECRET_B = 'fl_test_integrator_b';
const TOKEN_B = { id: 'tok_integrator_b', name: 'integrator B', tier: 'default', scopes: ['mcp'] };
const PAYLOAD = `data:text/plain;base64,${Buffer.from('only for A').toString('base64')}`;

/** A's session resource on server-everything: its tool gzips `data` and registers the result in the caller's session. */
async function createSessionResource(client: Client, name: string): Promise<string> {
  const result = (await client.callTool({ name: 'gzip-file-as-resource', arguments: { name, data: PAYLOAD, outputType: 'resourceLink' } })) as CallToolResult;
  const link = result.content.find((block) => block.type === 'resource_link') as { uri: string } | undefined;
  if (link === undefined) throw new Error(`no resource link in ${JSON.stringify(result)}`);
  return link.uri;
}

describe('in front of the real server-everything, each integrator has its own upstream session', () => {
  let upstream: EverythingUpstream;
  let proxy: RecordingProxy;
  let firelimit: RunningFirelimit;

  beforeAll(async () => {
    upstream = await startEverythingUpstream();
    proxy = await startRecordingProxy(upstream.url);
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_TIMEOUT_MS: '3000' }, { tokens: { [SECRET_B]: TOKEN_B } });
  });
  afterAll(async () => {
    await firelimit?.stop();
    await proxy?.close();
    await upstream?.close();
  });

  it("integrator B never sees or reads the resource A created in A's session; A reads it", async () => {
    const a = await connect(firelimit.url);
    const b = await connect(firelimit.url, undefined, SECRET_B);
    try {
      const uri = await createSessionResource(a, 'a-only.txt.gz');
      expect(uri).toBe('demo://resource/session/a-only.txt.gz');
      const mine = await a.readResource({ uri });
      expect(mine.contents[0]?.uri).toBe(uri);

      expect((await b.listResources()).resources.map((r) => r.uri)).not.toContain(uri);
      await expect(b.readResource({ uri })).rejects.toThrow();
      // B's own calls still work, on B's own session.
      expect(textOf((await b.callTool({ name: 'echo', arguments: { message: 'b' } })) as CallToolResult)).toBe('Echo: b');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("each integrator's requests reach the upstream on its own session, labelled with its token id", async () => {
    proxy.clear();
    const a = await connect(firelimit.url);
    const b = await connect(firelimit.url, undefined, SECRET_B);
    try {
      await a.callTool({ name: 'echo', arguments: { message: 'a' } });
      await b.callTool({ name: 'echo', arguments: { message: 'b' } });
      await a.callTool({ name: 'echo', arguments: { message: 'a again' } });
    } finally {
      await a.close();
      await b.close();
    }
    const calls = proxy.of('tools/call');
    const sessionOf = (tokenId: string): Set<string | undefined> => new Set(calls.filter((c) => c.tokenId === tokenId).map((c) => c.sessionId));
    expect(calls.map((c) => c.tokenId)).toEqual([TEST_TOKEN.id, TOKEN_B.id, TEST_TOKEN.id]);
    expect(sessionOf(TEST_TOKEN.id).size).toBe(1);
    expect(sessionOf(TOKEN_B.id).size).toBe(1);
    expect([...sessionOf(TEST_TOKEN.id)][0]).not.toBe([...sessionOf(TOKEN_B.id)][0]);
    expect([...sessionOf(TEST_TOKEN.id)][0]).toEqual(expect.any(String));
  });

  it('a killed and restarted upstream is served again within 15 s, with one WARNING for the outage and no firelimit restart', async () => {
    const a = await connect(firelimit.url);
    const b = await connect(firelimit.url, undefined, SECRET_B);
    try {
      await a.callTool({ name: 'echo', arguments: { message: 'before' } });
      await b.callTool({ name: 'echo', arguments: { message: 'before' } });
      const warningsBefore = firelimit.logger.entries.filter((e) => e.fields?.event === 'gateway.upstream_down').length;
      await upstream.kill();
      for (let i = 0; i < 5; i++) {
        const failed = (await a.callTool({ name: 'echo', arguments: { message: `down ${i}` } })) as CallToolResult;
        expect(failed.isError).toBe(true);
      }
      await b.callTool({ name: 'echo', arguments: { message: 'down' } });
      expect(firelimit.logger.entries.filter((e) => e.fields?.event === 'gateway.upstream_down').length).toBe(warningsBefore + 1);
      expect(firelimit.logger.entries.filter((e) => e.severity === 'WARNING' && e.fields?.event === 'gateway.call_failed')).toEqual([]);

      await upstream.restart();
      const restartedAt = Date.now();
      // The restarted server answers the old session ids with HTTP 400 ("No valid session ID provided"): a new session each.
      const answered = (await a.callTool({ name: 'echo', arguments: { message: 'after' } })) as CallToolResult;
      expect(textOf(answered)).toBe('Echo: after');
      expect(textOf((await b.callTool({ name: 'echo', arguments: { message: 'after' } })) as CallToolResult)).toBe('Echo: after');
      expect(Date.now() - restartedAt).toBeLessThan(15_000);
      expect(firelimit.logger.entries.some((e) => e.fields?.event === 'gateway.upstream_recovered')).toBe(true);
      expect(firelimit.logger.entries.some((e) => e.fields?.event === 'gateway.upstream_session_expired')).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a frozen upstream (SIGSTOP): calls time out, one WARNING for the outage, and it is served again once thawed', async () => {
    const a = await connect(firelimit.url);
    try {
      await a.callTool({ name: 'echo', arguments: { message: 'before' } });
      const warningsBefore = firelimit.logger.entries.filter((e) => e.fields?.event === 'gateway.upstream_down').length;
      upstream.suspend();
      try {
        const results = (await Promise.all([1, 2, 3].map((i) => a.callTool({ name: 'echo', arguments: { message: `frozen ${i}` } })))) as CallToolResult[];
        expect(results.map((r) => r.isError)).toEqual([true, true, true]);
        expect(textOf(results[0] as CallToolResult)).toMatch(/did not answer within 3000 ms/);
      } finally {
        upstream.resume();
      }
      expect(firelimit.logger.entries.filter((e) => e.fields?.event === 'gateway.upstream_down').length).toBe(warningsBefore + 1);
      expect(firelimit.logger.entries.filter((e) => e.severity === 'WARNING' && e.fields?.event === 'gateway.call_failed')).toEqual([]);
      expect(textOf((await a.callTool({ name: 'echo', arguments: { message: 'thawed' } })) as CallToolResult)).toBe('Echo: thawed');
    } finally {
      await a.close();
    }
  });
});
