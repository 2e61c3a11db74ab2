import type { CallToolResult } from '@modelcontextprotocol/client';
import { connect, eventually, startFirelimit } from '../support/gateway-harness';
import { startStatefulUpstream } from '../support/stateful-upstream-mcp-server';
import { startUpstreamStub } from '../support/upstream-mcp-server';

/**
 * The upstream's notifications/tools/list_changed drops firelimit's cached
 * lists. The clock is frozen and UPSTREAM_LIST_TTL_MS is an hour, so only
 * the notification can explain a refreshed list.
 */

const AN_HOUR_MS = '3600000';

describe("the upstream's list_changed refreshes the cached lists before UPSTREAM_LIST_TTL_MS", () => {
  it('a session-keeping upstream that adds, then removes, a tool at runtime: the next tools/list shows it, then not', async () => {
    const nowMs = Date.UTC(2026, 11, 1, 12);
    const upstream = await startStatefulUpstream();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_LIST_TTL_MS: AN_HOUR_MS }, { clock: () => nowMs });
    const client = await connect(firelimit.url);
    try {
      const names = async (): Promise<string[]> => (await client.listTools()).tools.map((t) => t.name);
      expect(await names()).not.toContain('added_at_runtime');
      // firelimit's one upstream session, and its standalone GET stream, the only channel list_changed can come on.
      await eventually('the gateway opened its standalone stream upstream', () => upstream.sessions[0]?.standaloneStream?.headersSent === true);
      expect(upstream.sessions).toHaveLength(1);
      const session = upstream.sessions[0]!;

      // Added on the shared session's server, the one that tells; the call runs on the token's own session (ADR 0050),
      // whose server gets the tool too, as a server whose tools are the same in every session has it.
      const added = session.server.registerTool('added_at_runtime', { description: 'registered after connect' }, () => ({ content: [{ type: 'text', text: 'fresh' }] }));
      const onCallerSessions: { remove(): void }[] = [];
      const addToNewSessions = (): void => {
        for (const other of upstream.sessions.slice(1 + onCallerSessions.length)) {
          onCallerSessions.push(other.server.registerTool('added_at_runtime', { description: 'registered after connect' }, () => ({ content: [{ type: 'text', text: 'fresh' }] })));
        }
      };
      await eventually('tools/list shows the added tool', async () => (await names()).includes('added_at_runtime'));
      // The token's session opens on its first call; the tool is registered there before that call runs.
      await client.callTool({ name: 'echo', arguments: { text: 'opens the session' } });
      addToNewSessions();
      const called = (await client.callTool({ name: 'added_at_runtime', arguments: {} })) as CallToolResult;
      expect(called.content).toEqual([{ type: 'text', text: 'fresh' }]);

      for (const tool of onCallerSessions) tool.remove();
      added.remove();
      await eventually('tools/list no longer shows the removed tool', async () => !(await names()).includes('added_at_runtime'));
      await expect(client.callTool({ name: 'added_at_runtime', arguments: {} })).rejects.toThrow(/added_at_runtime not found/);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });

  it("resources and prompts too: a resource and a prompt the session's server adds show up at once", async () => {
    const nowMs = Date.UTC(2026, 11, 1, 12);
    const upstream = await startStatefulUpstream();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_LIST_TTL_MS: AN_HOUR_MS }, { clock: () => nowMs });
    const client = await connect(firelimit.url);
    try {
      const uris = async (): Promise<string[]> => (await client.listResources()).resources.map((r) => r.uri);
      const prompts = async (): Promise<string[]> => (await client.listPrompts()).prompts.map((p) => p.name);
      expect(await uris()).not.toContain('upstream://added');
      expect(await prompts()).not.toContain('added_prompt');
      await eventually('the gateway opened its standalone stream upstream', () => upstream.sessions[0]?.standaloneStream?.headersSent === true);
      const { server } = upstream.sessions[0]!;
      server.registerResource('added', 'upstream://added', { mimeType: 'text/plain' }, (uri) => ({ contents: [{ uri: uri.href, text: 'new' }] }));
      await eventually('resources/list shows the added resource', async () => (await uris()).includes('upstream://added'));
      server.registerPrompt('added_prompt', { description: 'added at runtime' }, () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] }));
      await eventually('prompts/list shows the added prompt', async () => (await prompts()).includes('added_prompt'));
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });

  it('a stateless upstream has no stream to say so on: a tool it adds shows up only after the TTL', async () => {
    let nowMs = Date.UTC(2026, 11, 1, 12);
    const upstream = await startUpstreamStub();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_LIST_TTL_MS: AN_HOUR_MS }, { clock: () => nowMs });
    const client = await connect(firelimit.url);
    try {
      const names = async (): Promise<string[]> => (await client.listTools()).tools.map((t) => t.name);
      expect(await names()).not.toContain('added_later');
      upstream.extraTools.push('added_later');
      // Its standalone GET was refused (a stateless server keeps no stream), so nothing can announce the change.
      expect(upstream.hits.some((hit) => hit.method === undefined && hit.headers.accept?.includes('text/event-stream') === true)).toBe(true);
      expect(await names()).not.toContain('added_later');
      nowMs += Number(AN_HOUR_MS);
      expect(await names()).toContain('added_later');
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });
});
