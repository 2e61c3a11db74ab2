import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { startFirelimit, type RunningFirelimit } from '../support/gateway-harness';
import { startStatefulUpstream, type StatefulUpstream } from '../support/stateful-upstream-mcp-server';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';
import { GOOD_SECRET } from '../support/mcp-test-app';

/**
 * An upstream tool that asks its client for something (sampling, an
 * elicitation, the roots) is never relayed to firelimit's caller
 * (docs/adr/0039-upstream-requests-to-the-client.md). An upstream with
 * sessions hears the refusal at once, in words, and its call ends normally.
 * A stateless upstream cannot be answered at all (the refusal is posted to
 * a server that keeps no session to route it to), so the call ends at
 * UPSTREAM_TIMEOUT_MS, never later. The upstream's own request timeout is
 * 10 s, longer than either bound.
 */

const PROMPTLY_MS = 2000;

async function ask(client: Client, what: 'sampling' | 'elicitation' | 'roots'): Promise<{ text: string; elapsedMs: number }> {
  const startedAtMs = Date.now();
  const result = (await client.callTool({ name: 'ask', arguments: { what } })) as CallToolResult;
  const text = result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
  return { text, elapsedMs: Date.now() - startedAtMs };
}

/** An integrator that offers sampling, elicitation and roots, so anything relayed would reach these handlers and be recorded. */
async function offeringEverything(url: URL, asked: string[]): Promise<Client> {
  const client = new Client({ name: 'integrator', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {}, roots: {} } });
  client.setRequestHandler('sampling/createMessage', () => {
    asked.push('sampling');
    return { role: 'assistant', content: { type: 'text', text: 'relayed' }, model: 'm' };
  });
  client.setRequestHandler('elicitation/create', () => {
    asked.push('elicitation');
    return { action: 'decline' };
  });
  client.setRequestHandler('roots/list', () => {
    asked.push('roots');
    return { roots: [] };
  });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${GOOD_SECRET}` } } }));
  return client;
}

describe('requests from an upstream with sessions to its client are refused at once, never relayed', () => {
  let upstream: StatefulUpstream;
  let firelimit: RunningFirelimit;
  let client: Client;
  const asked: string[] = [];

  beforeAll(async () => {
    upstream = await startStatefulUpstream();
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_TIMEOUT_MS: '15000' });
    client = await offeringEverything(firelimit.url, asked);
  });

  afterAll(async () => {
    await client.close();
    await firelimit.stop();
    await upstream.close();
  });

  it.each(['sampling', 'roots'] as const)('%s: the upstream hears "not relayed" (-32601) and its call ends normally', async (what) => {
    const { text, elapsedMs } = await ask(client, what);
    expect(text).toMatch(new RegExp(`^${what} refused \\(-32601\\): [A-Za-z/]+ is not relayed`));
    expect(elapsedMs).toBeLessThan(PROMPTLY_MS);
    expect(asked).toEqual([]);
  });

  it("elicitation: the upstream's SDK does not even ask, since firelimit's client declares no capability", async () => {
    const { text, elapsedMs } = await ask(client, 'elicitation');
    expect(text).toMatch(/^elicitation refused .*does not support/);
    expect(elapsedMs).toBeLessThan(PROMPTLY_MS);
    expect(asked).toEqual([]);
  });
});

describe('requests from a stateless upstream to its client cannot be answered: the call ends at UPSTREAM_TIMEOUT_MS', () => {
  let upstream: UpstreamStub;
  let firelimit: RunningFirelimit;
  let client: Client;
  const asked: string[] = [];

  beforeAll(async () => {
    upstream = await startUpstreamStub();
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_TIMEOUT_MS: '800' });
    client = await offeringEverything(firelimit.url, asked);
  });

  afterAll(async () => {
    await client.close();
    await firelimit.stop();
    await upstream.close();
  });

  it.each(['sampling', 'roots'] as const)('%s: a tool error naming the deadline, well before the upstream\'s own 10 s', async (what) => {
    const { text, elapsedMs } = await ask(client, what);
    expect(text).toContain('did not answer within 800 ms');
    expect(elapsedMs).toBeLessThan(PROMPTLY_MS);
    expect(asked).toEqual([]);
  });
});
