import { Client, StreamableHTTPClientTransport, UnauthorizedError, type CallToolResult } from '@modelcontextprotocol/client';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { subjectCallerId } from '../../src/tokens/subject-id';
import { createCapturingLogger } from '../support/capturing-logger';
import { InMemoryOAuthClient, signInAs } from '../support/oauth-test-client';
import { startOidcProvider, type OidcProvider } from '../support/oidc-provider';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/**
 * The MCP SDK 2.x client's own OAuth flow against a real OpenID provider
 * (oidc-provider) on loopback: our RFC 9728 metadata names the provider, the
 * client registers itself (RFC 7591), signs the user in with PKCE, gets a JWT
 * access token for our resource (RFC 8707) and calls a tool. Two firelimit
 * instances on one Redis sit behind a round-robin front, as Cloud Run's load
 * balancer puts them: the subject's limit holds across both, and a second
 * user has its own.
 */
const LIMIT = 4;
const ACCEPT = 'application/json, text/event-stream';

let dir: string;
let redis: RedisServer;
let oidc: OidcProvider;
const services: Service[] = [];
const backends: Server[] = [];
let front: Server;
let mcpUrl: URL;
const served = [0, 0];
const logger = createCapturingLogger();
// Frozen mid-window at the start, so no minute boundary falls inside the test; the issuer's tolerance covers the tokens' iat.
const frozenMs = Math.floor(Date.now() / 60_000) * 60_000 + 10_000;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-oauth-sign-in-'));
  [redis, oidc] = await Promise.all([startRedisServer(), startOidcProvider({ tiers: { carol: 'pro' } })]);
  const backendPorts: number[] = [];
  for (let i = 0; i < 2; i++) {
    const backend = createServer();
    backends.push(backend);
    backendPorts.push(await listen(backend));
  }
  let next = 0;
  front = createServer((req, res) => {
    const index = next++ % 2;
    served[index] = (served[index] ?? 0) + 1;
    const upstream = httpRequest({ host: '127.0.0.1', port: backendPorts[index], method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  const frontPort = await listen(front);
  mcpUrl = new URL(`http://127.0.0.1:${frontPort}/mcp`);

  const issuersFile = path.join(dir, 'issuers.json');
  writeFileSync(issuersFile, JSON.stringify({ resource: mcpUrl.href, issuers: [{ issuer: oidc.issuer, algorithms: ['ES256'], clockToleranceMs: 300_000 }] }));
  const config = loadConfig({
    RATE_LIMIT_BACKEND: 'redis',
    REDIS_URL: redis.url,
    RATE_LIMIT_PER_MINUTE: String(LIMIT),
    RATE_LIMIT_TIERS: 'pro=6',
    TOKENS_FILE: path.join(dir, 'tokens.json'),
    AUTH_ISSUERS_FILE: issuersFile,
  });
  for (let i = 0; i < 2; i++) {
    const service = await buildService(config, { logger, clock: () => frozenMs });
    services.push(service);
    backends[i]?.on('request', service.app);
  }
}, 60_000);

afterAll(async () => {
  for (const server of [front, ...backends]) await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  for (const service of services) await service.release();
  await oidc?.stop();
  await redis?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Connects as `user` through the SDK's OAuth flow; returns the connected client and its provider. */
async function connectAs(user: string): Promise<{ client: Client; oauth: InMemoryOAuthClient }> {
  const oauth = new InMemoryOAuthClient();
  const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: oauth });
  const refused = await new Client({ name: 'oauth-test', version: '1.0.0' }).connect(first).catch((error: unknown) => error);
  if (!(refused instanceof UnauthorizedError)) throw refused;
  expect(oauth.authorizationUrl?.origin).toBe(oidc.issuer);
  await first.finishAuth(await signInAs(oauth.authorizationUrl as URL, user));
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: oauth }));
  return { client, oauth };
}

async function callWhoami(client: Client): Promise<CallToolResult | { refused: number }> {
  try {
    return (await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult;
  } catch (error) {
    return { refused: (error as { status?: number; code?: number }).status ?? (error as { code?: number }).code ?? -1 };
  }
}

describe('OAuth sign-in through the MCP SDK client', () => {
  it('serves RFC 9728 metadata naming the provider, and points a 401 at it', async () => {
    const metadata = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', mcpUrl));
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toEqual({
      resource: mcpUrl.href,
      authorization_servers: [oidc.issuer],
      scopes_supported: ['mcp'],
      bearer_methods_supported: ['header'],
      resource_name: 'firelimit MCP',
      resource_documentation: `${mcpUrl.origin}/developers#sign-in`,
    });
    const unauthorized = await fetch(mcpUrl, { method: 'POST', headers: { accept: ACCEPT, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('www-authenticate')).toBe(`Bearer realm="firelimit", resource_metadata="${mcpUrl.origin}/.well-known/oauth-protected-resource/mcp"`);
  });

  it('still answers the authorization server paths and /register with a refusal, now naming where the metadata is', async () => {
    const metadataUrl = `${mcpUrl.origin}/.well-known/oauth-protected-resource/mcp`;
    const asMetadata = await fetch(new URL('/.well-known/oauth-authorization-server', mcpUrl));
    expect(asMetadata.status).toBe(404);
    const body = (await asMetadata.json()) as { error_description: string; reason: string };
    expect(body.reason).toBe('oauth_not_supported');
    expect(body.error_description).toContain(`Sign in with an authorization server named in ${metadataUrl}`);
    expect(body.error_description).not.toContain('no OAuth metadata to discover');
    const register = await fetch(new URL('/register', mcpUrl), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(register.status).toBe(403);
    expect(((await register.json()) as { error_description: string }).error_description).toContain(metadataUrl);
  });

  it('registers, signs alice in with PKCE and calls whoami as the caller of (issuer, alice); her limit holds across both instances', async () => {
    const servedBefore = [...served];
    const { client, oauth } = await connectAs('alice');
    expect(oauth.registrations).toBe(1);
    const token = oauth.tokens()?.access_token as string;
    expect(token.split('.')).toHaveLength(3); // a JWT access token, for our resource

    const results: (CallToolResult | { refused: number })[] = [];
    for (let i = 0; i < LIMIT + 2; i++) results.push(await callWhoami(client));
    const ok = results.filter((r): r is CallToolResult => 'structuredContent' in r);
    expect(ok).toHaveLength(LIMIT);
    expect(ok[0]?.structuredContent).toEqual({ tokenId: subjectCallerId(oidc.issuer, 'alice'), name: `signed in with ${oidc.issuer}`, tier: 'default', scopes: ['mcp'] });
    expect(results.slice(LIMIT)).toEqual([{ refused: 429 }, { refused: 429 }]);
    // Both instances served alice's calls: the count is the shared one.
    expect(served[0]! - servedBefore[0]!).toBeGreaterThanOrEqual(3);
    expect(served[1]! - servedBefore[1]!).toBeGreaterThanOrEqual(3);
    await client.close();
  });

  it('gives a second user her own limit, and her tier from the token claim', async () => {
    const { client } = await connectAs('carol');
    const results: (CallToolResult | { refused: number })[] = [];
    for (let i = 0; i < 7; i++) results.push(await callWhoami(client));
    const ok = results.filter((r): r is CallToolResult => 'structuredContent' in r);
    expect(ok).toHaveLength(6);
    expect(ok[0]?.structuredContent).toMatchObject({ tokenId: subjectCallerId(oidc.issuer, 'carol'), tier: 'pro' });
    await client.close();
  });

  it('refuses the access token at an instance that expects another resource (audience)', async () => {
    const { client, oauth: dave } = await connectAs('dave');
    await client.close();
    const config = loadConfig({ TOKENS_FILE: path.join(dir, 'tokens-other.json'), AUTH_ISSUERS_FILE: writeIssuers('https://other.example/mcp') });
    const other = await buildService(config, { logger, clock: () => frozenMs });
    try {
      const res = await fetch(`http://127.0.0.1:${await listenApp(other)}/mcp`, {
        method: 'POST',
        headers: { accept: ACCEPT, 'content-type': 'application/json', authorization: `Bearer ${dave.tokens()?.access_token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      expect(res.status).toBe(401);
    } finally {
      await closeApp();
      await other.release();
    }
  });
});

function writeIssuers(resource: string): string {
  const file = path.join(dir, `issuers-${resource.length}.json`);
  writeFileSync(file, JSON.stringify({ resource, issuers: [{ issuer: oidc.issuer, algorithms: ['ES256'], clockToleranceMs: 300_000 }] }));
  return file;
}

let extra: Server | undefined;
async function listenApp(service: Service): Promise<number> {
  extra = createServer(service.app);
  return listen(extra);
}
async function closeApp(): Promise<void> {
  await new Promise<void>((resolve) => (extra ? extra.close(() => resolve()) : resolve()));
}
