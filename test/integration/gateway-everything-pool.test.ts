import type { CallToolResult } from '@modelcontextprotocol/client';
import { startEverythingUpstream, startRecordingProxy } from '../support/everything-upstream';
import { connect, eventually, startFirelimit, textOf } from '../support/gateway-harness';

jest.setTimeout(60_000);

const TOKENS = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`fl_pool_secret_${i}`, { id: `tok_pool_${i}`, name: `pool ${i}`, tier: 'default', scopes: ['mcp'] }]));

describe('the upstream session pool under parallel bursts from more tokens than it holds', () => {
  it('UPSTREAM_SESSIONS_MAX=2, five tokens, four parallel calls each: every call answers, sessions past the cap are ended upstream', async () => {
    const upstream = await startEverythingUpstream();
    const proxy = await startRecordingProxy(upstream.url);
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_SESSIONS_MAX: '2' }, { tokens: TOKENS });
    const clients = await Promise.all(Object.keys(TOKENS).map((secret) => connect(firelimit.url, undefined, secret)));
    try {
      for (let round = 0; round < 2; round++) {
        const results = (await Promise.all(
          clients.flatMap((client, i) => [0, 1, 2, 3].map((n) => client.callTool({ name: 'echo', arguments: { message: `${i}.${round}.${n}` } }))),
        )) as CallToolResult[];
        expect(results.map(textOf)).toEqual(clients.flatMap((_, i) => [0, 1, 2, 3].map((n) => `Echo: ${i}.${round}.${n}`)));
      }
      const calls = proxy.of('tools/call');
      // Each call went on its own token's session, never another's.
      const owner = new Map<string, string>();
      for (const call of calls) {
        const seen = owner.get(call.sessionId ?? '');
        if (seen !== undefined) expect(call.tokenId).toBe(seen);
        owner.set(call.sessionId ?? '', call.tokenId ?? '');
      }
      // The pool ended the sessions it let go (the spec's DELETE, which server-everything logs).
      await eventually('an evicted session ended upstream', () => upstream.output().includes('Received session termination request'));
    } finally {
      await Promise.all(clients.map((client) => client.close()));
      await firelimit.stop();
      await proxy.close();
      await upstream.close();
    }
  });

  it("on shutdown every session firelimit opened is ended upstream: the shared one and each token's", async () => {
    const upstream = await startEverythingUpstream();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url }, { tokens: TOKENS });
    const secrets = Object.keys(TOKENS).slice(0, 2);
    const clients = await Promise.all(secrets.map((secret) => connect(firelimit.url, undefined, secret)));
    try {
      for (const client of clients) await client.callTool({ name: 'echo', arguments: { message: 'opens a session' } });
      await Promise.all(clients.map((client) => client.close()));
      const ended = (): number => upstream.output().split('Received session termination request').length - 1;
      expect(ended()).toBe(0);
      await firelimit.stop();
      // The server's log line reaches us through its stdout pipe, a moment after its answer.
      await eventually('three sessions ended upstream', () => ended() >= 3);
      expect(ended()).toBe(3);
    } finally {
      await upstream.close();
    }
  });
});
