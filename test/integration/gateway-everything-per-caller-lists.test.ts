import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { startEverythingUpstream, startRecordingProxy, type EverythingUpstream, type RecordingProxy } from '../support/everything-upstream';
import { connect, startFirelimit, type RunningFirelimit } from '../support/gateway-harness';
import { TEST_TOKEN } from '../support/mcp-test-app';

/**
 * UPSTREAM_LISTS=per-caller (docs/adr/0050-upstream-session-per-caller.md): each token's lists are fetched on
 * its own upstream session and cached for it alone, so what a session adds to its lists (server-everything's
 * session resources) is listed to the session's owner and to no one else. With the default (shared), it is
 * listed to no one.
 */

jest.setTimeout(60_000);

const SECRET_B = 'fl_test_integrator_b';
const TOKEN_B = { id: 'tok_integrator_b', name: 'integrator B', tier: 'default', scopes: ['mcp'] };
const PAYLOAD = `data:text/plain;base64,${Buffer.from('only for A').toString('base64')}`;

async function createSessionResource(client: Client, name: string): Promise<string> {
  const result = (await client.callTool({ name: 'gzip-file-as-resource', arguments: { name, data: PAYLOAD, outputType: 'resourceLink' } })) as CallToolResult;
  const link = result.content.find((block) => block.type === 'resource_link') as { uri: string } | undefined;
  if (link === undefined) throw new Error(`no resource link in ${JSON.stringify(result)}`);
  return link.uri;
}

const listed = async (client: Client): Promise<string[]> => (await client.listResources()).resources.map((r) => r.uri);

describe('lists per caller, as an operator turns them on', () => {
  let upstream: EverythingUpstream;
  let proxy: RecordingProxy;
  const running: RunningFirelimit[] = [];

  beforeAll(async () => {
    upstream = await startEverythingUpstream();
    proxy = await startRecordingProxy(upstream.url);
  });
  afterAll(async () => {
    for (const firelimit of running) await firelimit.stop();
    await proxy?.close();
    await upstream?.close();
  });

  it.each([
    // TTL 0: A's list after the call is fetched then, not served from before it.
    ['per-caller', true],
    ['shared', false],
  ])('UPSTREAM_LISTS=%s: the resource A created in its session is listed to A: %s; never to B', async (lists, toA) => {
    proxy.clear();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_LISTS: lists, UPSTREAM_LIST_TTL_MS: '0' }, { tokens: { [SECRET_B]: TOKEN_B } });
    running.push(firelimit);
    const a = await connect(firelimit.url);
    const b = await connect(firelimit.url, undefined, SECRET_B);
    try {
      const name = `a-${lists}.txt.gz`;
      const uri = await createSessionResource(a, name);
      expect((await listed(a)).includes(uri)).toBe(toA);
      expect(await listed(b)).not.toContain(uri);
      // Both still list the upstream's own resources and firelimit's.
      for (const client of [a, b]) expect(await listed(client)).toEqual(expect.arrayContaining(['firelimit://limits', 'demo://resource/static/document/architecture.md']));
      const lister = proxy.of('resources/list');
      if (toA) {
        // Each list went on its caller's own session, labelled with its token id.
        expect(new Set(lister.map((m) => m.tokenId))).toEqual(new Set([TEST_TOKEN.id, TOKEN_B.id]));
        const sessionOf = (tokenId: string) => new Set(proxy.messages.filter((m) => m.tokenId === tokenId && m.sessionId !== undefined).map((m) => m.sessionId));
        expect(sessionOf(TEST_TOKEN.id).size).toBe(1);
        expect([...sessionOf(TEST_TOKEN.id)][0]).not.toBe([...sessionOf(TOKEN_B.id)][0]);
      } else {
        expect(lister.every((m) => m.tokenId === undefined)).toBe(true);
      }
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("per-caller, A on the 2026-07-28 protocol: A's session resource is listed to A, not to B", async () => {
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_LISTS: 'per-caller', UPSTREAM_LIST_TTL_MS: '0' }, { tokens: { [SECRET_B]: TOKEN_B } });
    running.push(firelimit);
    const a = await connect(firelimit.url, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const b = await connect(firelimit.url, { versionNegotiation: { mode: { pin: '2026-07-28' } } }, SECRET_B);
    try {
      const uri = await createSessionResource(a, 'a-2026.txt.gz');
      expect(await listed(a)).toContain(uri);
      expect(await listed(b)).not.toContain(uri);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('per-caller: a tool list per token, cached per token for the TTL', async () => {
    proxy.clear();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_LISTS: 'per-caller', UPSTREAM_LIST_TTL_MS: '60000' }, { tokens: { [SECRET_B]: TOKEN_B } });
    running.push(firelimit);
    const a = await connect(firelimit.url);
    const b = await connect(firelimit.url, undefined, SECRET_B);
    try {
      for (let i = 0; i < 3; i++) {
        expect((await a.listTools()).tools.map((t) => t.name)).toContain('echo');
        expect((await b.listTools()).tools.map((t) => t.name)).toContain('echo');
      }
      const fetched = proxy.of('tools/list').filter((m) => m.tokenId !== undefined);
      expect(fetched.map((m) => m.tokenId).sort()).toEqual([TEST_TOKEN.id, TOKEN_B.id].sort());
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('refuses any other value, naming the knob and the values it takes', async () => {
    await expect(startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_LISTS: 'per-user' })).rejects.toThrow(/UPSTREAM_LISTS.*shared or per-caller/s);
  });
});
