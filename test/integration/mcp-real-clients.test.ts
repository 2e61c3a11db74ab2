import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, SdkHttpError, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { firstRejection } from '../support/mcp-calls';
import { buildTestApp, GOOD_SECRET, TEST_TOKEN, type TestApp } from '../support/mcp-test-app';

/**
 * The clients integrators use, over a real socket, in both protocol eras:
 * the SDK 2.x client pinned to 2026-07-28 (server/discover, a `_meta`
 * envelope on every request), the same client negotiating (`auto`), the same
 * client in its default 2025 handshake, and the SDK 1.x client. Each must
 * connect, list, call and read; each must see a refusal the way
 * /developers says it does.
 */

interface Started {
  readonly built: TestApp;
  readonly server: Server;
  readonly url: URL;
}

async function start(env: NodeJS.ProcessEnv): Promise<Started> {
  const built = await buildTestApp({ env });
  const server = built.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return { built, server, url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`) };
}

async function stop(started: Started): Promise<void> {
  await new Promise<void>((resolve) => started.server.close(() => resolve()));
  await started.built.release();
}

/** Every response's status and Retry-After, as seen on the wire, for holding client errors against it. */
interface Seen {
  readonly statuses: number[];
  readonly retryAfter: (string | null)[];
  readonly protocolVersions: (string | null)[];
  readonly methods: string[];
  /** JSON bodies as they came off the wire, before the client read them. */
  readonly bodies: unknown[];
}

function recordingFetch(seen: Seen): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    seen.statuses.push(response.status);
    seen.retryAfter.push(response.headers.get('retry-after'));
    seen.protocolVersions.push(new Headers(init?.headers).get('mcp-protocol-version'));
    seen.methods.push(init?.method ?? 'GET');
    const json = response.headers.get('content-type')?.startsWith('application/json') === true;
    seen.bodies.push(json ? await response.clone().json() : undefined);
    return response;
  };
}

interface Era {
  readonly label: string;
  readonly mode: 'legacy' | 'auto' | { pin: string };
  readonly version: string;
  /** What "no such resource" is in this era: -32602 since 2026-07-28 (SEP-2164), -32002 in the 2025 specs. */
  readonly resourceNotFound: number;
  /** A rate-limit refusal's JSON-RPC code in this era. */
  readonly rateLimited: number;
}

const ERAS: readonly Era[] = [
  // rateLimited: the era's refusal code (ADR 0023): 2026-07-28 reserves -32020..-32099 for the spec.
  { label: 'SDK 2.x pinned to 2026-07-28', mode: { pin: '2026-07-28' }, version: '2026-07-28', resourceNotFound: -32602, rateLimited: 429 },
  { label: 'SDK 2.x negotiating (auto)', mode: 'auto', version: '2026-07-28', resourceNotFound: -32602, rateLimited: 429 },
  { label: 'SDK 2.x, 2025 handshake (its default)', mode: 'legacy', version: '2025-11-25', resourceNotFound: -32002, rateLimited: -32029 },
];

async function connectV2(url: URL, era: Era, seen: Seen): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${GOOD_SECRET}` } },
    fetch: recordingFetch(seen),
  });
  const client = new Client({ name: 'firelimit-test-client', version: '1.0.0' }, { versionNegotiation: { mode: era.mode } });
  await client.connect(transport);
  return client;
}

const newSeen = (): Seen => ({ statuses: [], retryAfter: [], protocolVersions: [], methods: [], bodies: [] });

describe.each(ERAS)('$label', (era) => {
  let started: Started;
  beforeAll(async () => {
    started = await start({ RATE_LIMIT_PER_MINUTE: '120' });
  });
  afterAll(() => stop(started));

  test('connects in its era, lists both tools with output schemas, calls one and reads the limits', async () => {
    const seen = newSeen();
    const client = await connectV2(started.url, era, seen);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(era.version);
      expect(client.getServerVersion()?.name).toBe('firelimit');
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['rate_limit_status', 'whoami']);
      for (const tool of tools) expect(tool.outputSchema?.type).toBe('object');
      const who = (await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult;
      expect(who.isError).toBeFalsy();
      expect(who.structuredContent).toEqual({ tokenId: TEST_TOKEN.id, name: TEST_TOKEN.name, tier: 'default', scopes: ['mcp'] });
      const read = await client.readResource({ uri: 'firelimit://limits' });
      expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ backend: 'memory', defaultTier: 'default' });
      // After the connect, every request names the era's version.
      expect(seen.protocolVersions.at(-1)).toBe(era.version);
      // Every POST answered; a 2025 client's GET for a stream it may open gets 405 (stateless: no stream).
      seen.statuses.forEach((status, i) => expect([seen.methods[i], status]).toEqual(seen.methods[i] === 'GET' ? ['GET', 405] : ['POST', expect.any(Number)]));
      expect(seen.statuses.filter((status, i) => seen.methods[i] === 'POST' && status !== 200 && status !== 202)).toEqual([]);
    } finally {
      await client.close();
    }
  });

  test('is told only what the server delivers: no listChanged', async () => {
    const client = await connectV2(started.url, era, newSeen());
    try {
      const capabilities = client.getServerCapabilities();
      expect(capabilities?.tools).toBeDefined();
      expect(capabilities?.resources).toBeDefined();
      expect(capabilities?.tools?.listChanged ?? false).toBe(false);
      expect(capabilities?.resources?.listChanged ?? false).toBe(false);
    } finally {
      await client.close();
    }
  });

  test("an unknown resource is the era's resource-not-found error, naming the uri", async () => {
    const seen = newSeen();
    const client = await connectV2(started.url, era, seen);
    try {
      const failure = await client.readResource({ uri: 'firelimit://nothing-here' }).then(
        () => undefined,
        (error: unknown) => error,
      );
      // The client hands either code over as a ProtocolError naming the uri; the wire carries the era's own.
      expect(failure).toMatchObject({ data: { uri: 'firelimit://nothing-here' } });
      expect(seen.bodies.at(-1)).toMatchObject({ error: { code: era.resourceNotFound, data: { uri: 'firelimit://nothing-here' } } });
    } finally {
      await client.close();
    }
  });
});

describe('a refusal, as each client hands it to the caller', () => {
  // A limit of 3: the connect and the first calls use it up, and the next call is refused.
  let started: Started;
  beforeEach(async () => {
    started = await start({ RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterEach(() => stop(started));

  test.each(ERAS)('$label: SdkHttpError, status 429, our JSON-RPC body (with data) as text; Retry-After only on the wire', async (era) => {
    const seen = newSeen();
    const client = await connectV2(started.url, era, seen);
    try {
      const failure = await firstRejection(() => client.callTool({ name: 'whoami', arguments: {} }));
      expect(failure).toBeInstanceOf(SdkHttpError);
      const error = failure as SdkHttpError;
      expect(error.status).toBe(429);
      const body = JSON.parse(String(error.data.text)) as { error: { code: number; data: { retryAfterSeconds: number; limit: number } } };
      expect(body.error.code).toBe(era.rateLimited);
      expect(body.error.data).toMatchObject({ error: 'rate_limited', limit: 3, windowSeconds: 60 });
      expect(error.message).toContain('"retryAfterSeconds"');
      // The client does not expose headers; a fetch wrapper (as here) is how a caller reads Retry-After.
      const refusedAt = seen.statuses.indexOf(429);
      expect(Number(seen.retryAfter[refusedAt])).toBe(body.error.data.retryAfterSeconds);
    } finally {
      await client.close();
    }
  });

  test('SDK 1.x: StreamableHTTPError with code 429, our body inside the message', async () => {
    const seen = newSeen();
    const transport = new TransportV1(started.url, {
      requestInit: { headers: { Authorization: `Bearer ${GOOD_SECRET}` } },
      fetch: recordingFetch(seen),
    });
    const client = new ClientV1({ name: 'firelimit-test-client', version: '1.0.0' });
    await client.connect(transport);
    try {
      const failure = await firstRejection(() => client.callTool({ name: 'whoami', arguments: {} }));
      expect(failure).toBeInstanceOf(StreamableHTTPError);
      const error = failure as StreamableHTTPError;
      expect(error.code).toBe(429);
      const json = error.message.slice(error.message.indexOf('{'));
      const body = JSON.parse(json) as { error: { code: number; data: { retryAfterSeconds: number } } };
      expect(body.error.code).toBe(-32029);
      expect(Number(seen.retryAfter[seen.statuses.indexOf(429)])).toBe(body.error.data.retryAfterSeconds);
    } finally {
      await client.close();
    }
  });
});
