import type { CallToolResult } from '@modelcontextprotocol/client';
import { connect, startFirelimit } from '../support/gateway-harness';
import { startStatefulUpstream } from '../support/stateful-upstream-mcp-server';

/**
 * A stateful upstream that restarts forgets firelimit's session and answers
 * HTTP 404 to it. The spec has the client start a new session; firelimit
 * does, and sends the call again on it, so no integrator sees the restart.
 */
describe('an upstream that restarts and forgets its sessions', () => {
  it('the next calls, even several at once, run on one new session and none fails', async () => {
    const upstream = await startStatefulUpstream();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url });
    const client = await connect(firelimit.url);
    try {
      expect(((await client.callTool({ name: 'echo', arguments: { text: 'before' } })) as CallToolResult).structuredContent).toEqual({ echoed: 'before' });
      // The shared session the lists are fetched on, and the token's own (ADR 0050).
      expect(upstream.sessions.length).toBe(2);
      const [, oldSession] = upstream.sessions.map((session) => session.id);
      upstream.restart();
      const after = (await Promise.all(['a', 'b', 'c'].map((text) => client.callTool({ name: 'echo', arguments: { text } })))) as CallToolResult[];
      expect(after.map((result) => result.structuredContent)).toEqual([{ echoed: 'a' }, { echoed: 'b' }, { echoed: 'c' }]);
      expect(upstream.sessions.length).toBe(3);
      // On the new session each call arrived exactly once; the old session's copies were refused (404) before any tool ran.
      const onNewSession = upstream.calls().filter((hit) => hit.headers['mcp-session-id'] !== oldSession).map((hit) => (hit.args as { text: string }).text);
      expect(onNewSession.sort()).toEqual(['a', 'b', 'c']);
      expect(firelimit.logger.entries.some((entry) => entry.fields?.event === 'gateway.upstream_session_expired')).toBe(true);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });
});
