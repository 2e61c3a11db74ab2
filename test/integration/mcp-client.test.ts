import { Client, SdkHttpError, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { buildTestApp, GOOD_SECRET, TEST_TOKEN } from '../support/mcp-test-app';

/**
 * The SDK's own client, over a real socket, is the integrator's view of /mcp:
 * if it can initialize, list and call, so can theirs.
 */
const PRO_SECRET = 'fl_test_pro_secret';
const PRO_TOKEN = { id: 'tok_pro1', name: 'pro integrator', tier: 'pro', scopes: ['mcp', 'admin:read'] };

let server: Server;
let url: URL;
let release: () => Promise<void>;

beforeAll(async () => {
  const built = await buildTestApp({
    env: { RATE_LIMIT_PER_MINUTE: '120', RATE_LIMIT_TIERS: 'pro=600' },
    tokens: { [GOOD_SECRET]: TEST_TOKEN, [PRO_SECRET]: PRO_TOKEN },
  });
  release = built.release;
  server = built.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await release();
});

/** A client whose every response's x-ratelimit-remaining is recorded, to hold tool output against the headers. */
async function connect(secret: string): Promise<{ client: Client; remainingHeaders: string[] }> {
  const remainingHeaders: string[] = [];
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${secret}` } },
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const remaining = response.headers.get('x-ratelimit-remaining');
      if (remaining !== null) remainingHeaders.push(remaining);
      return response;
    },
  });
  const client = new Client({ name: 'firelimit-test-client', version: '1.0.0' });
  await client.connect(transport);
  return { client, remainingHeaders };
}

function structured(result: unknown): Record<string, unknown> {
  const r = result as CallToolResult;
  expect(r.isError).toBeFalsy();
  expect(r.content[0]?.type).toBe('text');
  return r.structuredContent as Record<string, unknown>;
}

test('a client with a valid token initializes and sees both tools with output schemas', async () => {
  const { client } = await connect(GOOD_SECRET);
  try {
    expect(client.getServerVersion()?.name).toBe('firelimit');
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(['rate_limit_status', 'whoami']);
    for (const tool of tools) expect(tool.outputSchema?.type).toBe('object');
  } finally {
    await client.close();
  }
});

test('rate_limit_status reports the figures of the call itself, and remaining drops by one per call', async () => {
  const { client, remainingHeaders } = await connect(GOOD_SECRET);
  try {
    const first = structured(await client.callTool({ name: 'rate_limit_status', arguments: {} }));
    const headerAfterFirst = Number(remainingHeaders.at(-1));
    const second = structured(await client.callTool({ name: 'rate_limit_status', arguments: {} }));

    expect(first).toMatchObject({ tokenId: TEST_TOKEN.id, tier: 'default', limit: 120, windowSeconds: 60, shared: false, backend: 'memory' });
    expect(first.reason).toBe('within_limit');
    // The tool reports the decision already made for its own request: the same figure the headers carried.
    expect(first.remaining).toBe(headerAfterFirst);
    expect(second.remaining).toBe((first.remaining as number) - 1);
    expect(first.remaining as number).toBeLessThan(120);
    expect(Date.parse(first.resetAt as string)).toBeGreaterThan(Date.now() - 1000);
    expect(first.resetInSeconds as number).toBeGreaterThanOrEqual(0);
    expect(first.resetInSeconds as number).toBeLessThanOrEqual(60);
  } finally {
    await client.close();
  }
});

test('whoami names the token, its tier and scopes, and a tiered token is counted under its tier', async () => {
  const { client } = await connect(PRO_SECRET);
  try {
    const who = structured(await client.callTool({ name: 'whoami', arguments: {} }));
    expect(who).toEqual({ tokenId: 'tok_pro1', name: 'pro integrator', tier: 'pro', scopes: ['mcp', 'admin:read'] });
    const status = structured(await client.callTool({ name: 'rate_limit_status', arguments: {} }));
    expect(status).toMatchObject({ tier: 'pro', limit: 600 });
    const text = ((await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult).content[0];
    expect(text).toMatchObject({ type: 'text' });
    expect(JSON.stringify(text)).toContain('tok_pro1');
  } finally {
    await client.close();
  }
});

test('the limits resource lists the configured tiers', async () => {
  const { client } = await connect(GOOD_SECRET);
  try {
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain('firelimit://limits');
    const read = await client.readResource({ uri: 'firelimit://limits' });
    const body = JSON.parse((read.contents[0] as { text: string }).text);
    expect(body.tiers).toEqual([
      {
        name: 'default',
        limit: 120,
        windowSeconds: 60,
        policies: [{ name: 'default', algorithm: 'fixed-window', limit: 120, windowSeconds: 60, maxCost: 120, words: 'at most 120 in each minute window (windows start on the clock)' }],
      },
      {
        name: 'pro',
        limit: 600,
        windowSeconds: 60,
        policies: [{ name: 'pro', algorithm: 'fixed-window', limit: 600, windowSeconds: 60, maxCost: 600, words: 'at most 600 in each minute window (windows start on the clock)' }],
      },
    ]);
  } finally {
    await client.close();
  }
});

test('the same client with a bad token fails to connect with HTTP 401', async () => {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer fl_wrong' } } });
  const client = new Client({ name: 'firelimit-test-client', version: '1.0.0' });
  const failure = await client.connect(transport).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(SdkHttpError);
  expect((failure as SdkHttpError).status).toBe(401);
  await client.close();
});
