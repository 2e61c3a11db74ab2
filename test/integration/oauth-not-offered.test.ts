import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AccessDeniedError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import request from 'supertest';
import { loadConfig, type Config } from '../../src/config/config';
import { createServiceLogger } from '../../src/logging/create-service-logger';
import { buildService, type Service } from '../../src/service/build-service';

/**
 * What a client without a token meets after our 401: the OAuth discovery
 * paths and /register answer with how to authenticate instead of a bare 404
 * (docs/adr/0025-oauth-discovery-answers.md). The service is the real one
 * (buildService, real auth, file token store), logging JSON without a project
 * id, as `npm start` does with LOG_FORMAT=json.
 */

const ACCEPT = 'application/json, text/event-stream';
const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

// Every URL the MCP SDK's auth() and mcp-remote probe for a server at /mcp, and the OIDC variants other clients use.
const METADATA_PATHS = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/mcp',
  '/.well-known/oauth-authorization-server',
  '/.well-known/oauth-authorization-server/mcp',
  '/.well-known/openid-configuration',
  '/.well-known/openid-configuration/mcp',
  '/mcp/.well-known/openid-configuration',
  '/mcp/.well-known/oauth-authorization-server',
];

let dir: string;
let config: Config;
let service: Service;
const logChunks: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-oauth-'));
  // A small unauthenticated budget, so a test can see that discovery never spends it.
  config = loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), UNAUTHENTICATED_PER_MINUTE: '5', LOG_FORMAT: 'json' });
  expect(config.firebase.projectId).toBeUndefined();
  const output = new PassThrough();
  output.on('data', (chunk: Buffer) => logChunks.push(chunk.toString('utf8')));
  service = await buildService(config, { logger: createServiceLogger(config, { output }) });
});

afterAll(async () => {
  await service?.release();
  rmSync(dir, { recursive: true, force: true });
});

describe('OAuth discovery paths', () => {
  it.each(METADATA_PATHS)('GET %s answers 404 with an OAuth error that says to send a flk_ bearer token and links /developers', async (probe) => {
    const res = await request(service.app).get(probe).set('Host', 'mcp.example.test').set('MCP-Protocol-Version', '2025-06-18');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      error: 'not_found',
      error_description: expect.stringContaining('"Authorization: Bearer flk_..."'),
      error_uri: 'http://mcp.example.test/developers#tokens',
      reason: 'oauth_not_supported',
    });
    expect(res.body.error_description).toContain('runs no OAuth authorization server');
    expect(res.body.error_description).toContain('http://mcp.example.test/mcp');
  });

  it('POST /register answers 403 access_denied with the same instructions, without reading the body', async () => {
    const res = await request(service.app)
      .post('/register')
      .set('Host', 'mcp.example.test')
      .set('X-Forwarded-Proto', 'https')
      .send({ client_name: 'mcp-remote', redirect_uris: ['http://localhost:3334/oauth/callback'] });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      error: 'access_denied',
      error_description: expect.stringContaining('registers no OAuth clients'),
      error_uri: 'https://mcp.example.test/developers#tokens',
      reason: 'oauth_not_supported',
    });
    expect(res.body.error_description).toContain('"Authorization: Bearer flk_..."');
  });

  it('echoes only a plain host name: a Host with anything else in it gives a localhost link', async () => {
    const res = await request(service.app).get('/.well-known/oauth-authorization-server').set('Host', 'evil.test/"><x');
    expect(res.body.error_uri).toBe(`http://localhost:${config.port}/developers#tokens`);
    expect(JSON.stringify(res.body)).not.toContain('evil');
  });

  it('leaves other paths to the generic 404', async () => {
    for (const other of ['/.well-known/security.txt', '/.well-known', '/registerx', '/mcp/register']) {
      const res = await request(service.app).get(other);
      expect([other, res.status, res.body.error]).toEqual([other, 404, 'not_found']);
      expect(res.body.reason).toBeUndefined();
    }
  });

  it('spends none of the address budget for requests without a token: after many probes /mcp still answers 401, not 429', async () => {
    // All from the one loopback address (TRUST_PROXY_HOPS is 0), which the /mcp call below is counted against.
    for (let round = 0; round < 3 * config.rateLimit.unauthenticated.limit; round += 1) {
      const res = await request(service.app).get(METADATA_PATHS[round % METADATA_PATHS.length] as string);
      expect(res.status).toBe(404);
    }
    expect((await request(service.app).post('/register').send({})).status).toBe(403);
    const mcp = await request(service.app).post('/mcp').set('Host', 'localhost').set('Accept', ACCEPT).set('Content-Type', 'application/json').send(initialize);
    expect(mcp.status).toBe(401);
  });

  it('answers the 401 without resource_metadata, since no metadata document is served, and names the token and /developers', async () => {
    const res = await request(service.app).post('/mcp').set('Host', 'localhost').set('Accept', ACCEPT).set('Content-Type', 'application/json').send(initialize);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="firelimit"');
    expect(res.body.error.data).toEqual({ reason: 'missing_token' });
    expect(res.body.error.message).toContain('Authorization: Bearer flk_');
    expect(res.body.error.message).toContain('/developers');
  });
});

describe('a real MCP client that tries OAuth (the SDK 1.x auth flow mcp-remote runs)', () => {
  it('ends in our access_denied with the instructions, after probing the discovery paths and /register', async () => {
    const server: Server = service.app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const seen: string[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      seen.push(`${init?.method ?? 'GET'} ${new URL(String(input instanceof Request ? input.url : input)).pathname} ${res.status}`);
      return res;
    };
    const provider: OAuthClientProvider = {
      redirectUrl: 'http://localhost:3334/oauth/callback',
      clientMetadata: { client_name: 'oauth-probe-test', redirect_uris: ['http://localhost:3334/oauth/callback'] },
      clientInformation: () => undefined,
      saveClientInformation: () => undefined,
      tokens: () => undefined,
      saveTokens: () => undefined,
      redirectToAuthorization: () => {
        throw new Error('redirectToAuthorization must not be reached: registration is refused first');
      },
      saveCodeVerifier: () => undefined,
      codeVerifier: () => '',
    };
    try {
      const client = new Client({ name: 'oauth-probe-test', version: '1.0.0' });
      const failure = await client
        .connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider, fetch: recordingFetch }))
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(AccessDeniedError);
      expect((failure as Error).message).toContain('"Authorization: Bearer flk_..."');
      expect((failure as Error).message).toContain(`${base}/developers#tokens`);
      // The SDK 1.x order: RFC 9728 path-aware then root, then RFC 8414 and OIDC at the origin, then RFC 7591 registration.
      expect(seen).toEqual([
        'POST /mcp 401',
        'GET /.well-known/oauth-protected-resource/mcp 404',
        'GET /.well-known/oauth-protected-resource 404',
        'GET /.well-known/oauth-authorization-server 404',
        'GET /.well-known/openid-configuration 404',
        'POST /register 403',
      ]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('the JSON log of these requests', () => {
  it('has no template placeholder in any line, and no logName without a project id', () => {
    const lines = logChunks.join('').split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(METADATA_PATHS.length);
    for (const line of lines) {
      expect(line).not.toContain('{{');
      expect(JSON.parse(line)).not.toHaveProperty('logName');
    }
    expect(lines.some((line) => line.includes('/.well-known/oauth-protected-resource'))).toBe(true);
  });
});
