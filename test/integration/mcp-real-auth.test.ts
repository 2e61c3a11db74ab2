import { Client, SdkHttpError, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import request from 'supertest';
import { loadConfig, type Config } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { TokenService } from '../../src/tokens/token-service';
import { createCapturingLogger } from '../support/capturing-logger';

/** /mcp behind the real auth middleware and a file token store, as `npm start` runs it. */
const NOW_MS = 1_699_999_990_000; // 10 s into a minute window
const ACCEPT = 'application/json, text/event-stream';
const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } });

let dir: string;
let config: Config;
let service: Service;
let tokens: TokenService;
let limiter: Service['limiter'];
let app: Express;
const logger = createCapturingLogger();

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-real-auth-'));
  config = loadConfig({ RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_TIERS: 'pro=50', TOKENS_FILE: path.join(dir, 'tokens.json') });
  service = await buildService(config, { logger, clock: () => NOW_MS });
  tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
  ({ limiter, app } = service);
});

afterAll(async () => {
  await service?.release();
  rmSync(dir, { recursive: true, force: true });
});

function post(secret: string | undefined, body: unknown) {
  const req = request(app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json');
  if (secret !== undefined) req.set('Authorization', `Bearer ${secret}`);
  return req.send(JSON.stringify(body));
}

test('an MCP client with a token from the store calls whoami and gets that token back; a wrong one gets 401', async () => {
  const created = await tokens.create({ name: 'client test', tier: 'pro', scopes: ['mcp', 'extra'] });
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
  try {
    const client = new Client({ name: 'real-auth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${created.secret}` } } }));
    const result = (await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult;
    expect(result.structuredContent).toEqual({ tokenId: created.token.id, name: 'client test', tier: 'pro', scopes: ['mcp', 'extra'] });
    await client.close();

    const wrong = new Client({ name: 'real-auth-test', version: '1.0.0' });
    const failure = await wrong
      .connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${created.secret}x` } } }))
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SdkHttpError);
    expect((failure as SdkHttpError).status).toBe(401);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('with the per-token limit spent, a bad or missing token gets 401 (not 429) and leaves the counter alone', async () => {
  const { secret, token } = await tokens.create({ name: 'order test' });
  for (let i = 0; i < 3; i++) expect((await post(secret, call(i))).status).toBe(200);
  expect((await post(secret, call(3))).status).toBe(429);

  const bad = await post(`${secret.slice(0, -1)}Z`, call(4));
  expect(bad.status).toBe(401);
  expect(bad.headers['www-authenticate']).toMatch(/^Bearer/);
  // id null: auth runs before the body is read, so the request's id is not known yet.
  expect(bad.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001 } });
  const missing = await post(undefined, call(5));
  expect(missing.status).toBe(401);

  // A cost-0 read: the token's window still holds exactly the 3 allowed calls.
  const after = await limiter.consume(token.id, { cost: 0, policies: config.rateLimit.defaultTier.policies });
  expect(after.remaining).toBe(0);
  expect((await post(secret, call(6))).body.error.data.retryAfterSeconds).toBe(50);
});

test('a token without the mcp scope gets 403 before the limiter counts it', async () => {
  const { secret, token } = await tokens.create({ name: 'no scope', scopes: ['reports'] });
  const res = await post(secret, call(1));
  expect(res.status).toBe(403);
  expect(res.headers['x-ratelimit-remaining']).toBeUndefined();
  const window = await limiter.consume(token.id, { cost: 0, policies: config.rateLimit.defaultTier.policies });
  expect(window.remaining).toBe(3);
});

test('no log entry carries a token secret or the Authorization header', async () => {
  const { secret } = await tokens.create({ name: 'log test' });
  await post(secret, call(1));
  await post(`${secret}x`, call(2));
  const logged = JSON.stringify(logger.entries);
  expect(logged).not.toContain(secret);
  expect(logged.toLowerCase()).not.toContain('bearer');
});
