import { freeLoopbackPort, startEverythingUpstream } from '../support/everything-upstream';
import { connect, startFirelimit } from '../support/gateway-harness';

jest.setTimeout(60_000);

describe('completion/complete in front of an upstream that offers completions', () => {
  it('is advertised and relayed on the caller’s session, with the upstream’s answer', async () => {
    const upstream = await startEverythingUpstream();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url });
    const client = await connect(firelimit.url);
    try {
      expect(client.getServerCapabilities()?.completions).toEqual({});
      const answer = await client.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'Eng' } });
      expect(answer.completion.values).toEqual(['Engineering']);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
    }
  });

  it('is neither advertised nor relayed when the upstream offers none', async () => {
    const deadPort = await freeLoopbackPort();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: `http://127.0.0.1:${deadPort}/mcp`, UPSTREAM_TIMEOUT_MS: '2000' });
    const client = await connect(firelimit.url);
    try {
      expect(client.getServerCapabilities()?.completions).toBeUndefined();
    } finally {
      await client.close();
      await firelimit.stop();
    }
  });
});
