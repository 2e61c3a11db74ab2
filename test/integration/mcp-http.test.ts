import request from 'supertest';
import type { Express } from 'express';
import { loadConfig } from '../../src/config/config';
import { createApp } from '../../src/service/create-app';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { createCapturingLogger } from '../support/capturing-logger';
import { defineTool } from '../../src/mcp/tool-registry';
import { buildTestApp, GOOD_SECRET, PRICED_STATUS, standInAuth, TEST_TOKEN, type TestApp } from '../support/mcp-test-app';

/** The HTTP edges of /mcp, request by request. */
const NOW_MS = 1_699_999_990_000; // 10 s into the minute window that ends at 1_700_000_040_000
const clock = () => NOW_MS;
const ACCEPT = 'application/json, text/event-stream';
const call = (id: number | string, name = 'rate_limit_status') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

function post(app: Express, body: unknown, secret = GOOD_SECRET) {
  return request(app)
    .post('/mcp')
    .set('Accept', ACCEPT)
    .set('Authorization', `Bearer ${secret}`)
    .set('Content-Type', 'application/json')
    .send(typeof body === 'string' ? body : JSON.stringify(body));
}

describe('routes other than POST /mcp', () => {
  let app: Express;
  let release: () => Promise<void>;
  beforeAll(async () => ({ app, release } = await buildTestApp({ clock })));
  afterAll(() => release());

  test.each(['get', 'delete'] as const)('%s /mcp answers 405 with Allow: POST and a JSON-RPC body', async (method) => {
    const res = await request(app)[method]('/mcp').set('Accept', ACCEPT).set('Authorization', `Bearer ${GOOD_SECRET}`);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
  });

  test('/healthz answers 200 ok without auth', async () => {
    const res = await request(app).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  test('an unknown route answers 404 JSON', async () => {
    const res = await request(app).get('/nope');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found', message: 'No route for GET /nope' });
  });
});

describe('bodies MCP cannot act on', () => {
  let app: Express;
  let release: () => Promise<void>;
  beforeAll(async () => ({ app, release } = await buildTestApp({ clock, env: { MAX_BODY_BYTES: '1024' } })));
  afterAll(() => release());

  test('a body over MAX_BODY_BYTES gets 413 and a JSON-RPC error naming the limit', async () => {
    const res = await post(app, { ...call(1), padding: 'x'.repeat(2000) });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32013, message: 'Request body is larger than 1024 bytes', data: { maxBodyBytes: 1024 } },
    });
  });

  test('malformed JSON gets 400 with the JSON-RPC parse error -32700', async () => {
    const res = await post(app, '{"jsonrpc": "2.0", "id": 1,');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
  });

  test.each([
    ['an object without jsonrpc/method', { id: 3, hello: 'world' }, 3],
    ['a JSON string', '"tools/list"', null],
    ['an empty batch', [], null],
    ['a batch with a non-message', [call(1), 42], null],
  ])('%s gets 400 with -32600 Invalid Request', async (_label, body, id) => {
    const res = await post(app, typeof body === 'string' ? body : body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
  });

  test('a body that is not JSON gets 415 with the SDK code -32000, once the caller is authenticated', async () => {
    const res = await post(app, 'hello').set('Content-Type', 'text/plain');
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000, data: { reason: 'not_json' } } });
  });

  test('a body that is not JSON, without a token, gets 401: no body is looked at before auth', async () => {
    const res = await request(app).post('/mcp').set('Content-Type', 'text/plain').send('hello');
    expect(res.status).toBe(401);
  });

  test('an unknown JSON-RPC method gets the spec error -32601 with the request id', async () => {
    const res = await post(app, { jsonrpc: '2.0', id: 'req-9', method: 'no/such/method', params: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 'req-9', error: { code: -32601 } });
  });

  test('an unknown tool is a JSON-RPC error for the same request id, and is still counted', async () => {
    const res = await post(app, call(5, 'no_such_tool'));
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(5);
    expect(res.headers['x-ratelimit-remaining']).toBeDefined();
  });
});

describe('rate-limit headers and refusals', () => {
  let app: Express;
  let release: () => Promise<void>;
  beforeAll(async () => ({ app, release } = await buildTestApp({ clock, env: { RATE_LIMIT_PER_MINUTE: '3' } })));
  afterAll(() => release());

  test('a successful call carries every rate-limit header and agrees with them', async () => {
    const res = await post(app, call(1));
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBe('3');
    expect(res.headers['x-ratelimit-remaining']).toBe('2');
    expect(res.headers['x-ratelimit-reset']).toBe(String(1_700_000_040));
    expect(res.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
    expect(res.headers.ratelimit).toBe('"default";r=2;t=50');
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body.result.structuredContent).toMatchObject({ remaining: 2, limit: 3, resetInSeconds: 50, shared: false });
  });

  test('a batch costs one unit per message', async () => {
    const res = await post(app, [call(2), call(3)]);
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    expect(res.body).toHaveLength(2);
  });

  test('over the limit: 429, Retry-After, all headers, and a JSON-RPC error with the request id that says when to retry', async () => {
    const res = await post(app, call('call-4'));
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('50');
    expect(res.headers['x-ratelimit-limit']).toBe('3');
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    expect(res.headers['x-ratelimit-reset']).toBe(String(1_700_000_040));
    expect(res.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
    expect(res.headers.ratelimit).toBe('"default";r=0;t=50');
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: 'call-4',
      error: {
        code: -32029,
        message: 'Rate limit of 3 requests per 60 s exceeded. Retry after 50 s.',
        data: {
          error: 'rate_limited',
          reason: 'limit',
          message: 'Rate limit of 3 requests per 60 s exceeded. Retry after 50 s.',
          limit: 3,
          windowSeconds: 60,
          retryAfterSeconds: 50,
          resetAt: new Date(1_700_000_040_000).toISOString(),
        },
      },
    });
  });

  test('with the limit spent, a bad token still gets 401, not 429, and no rate-limit headers', async () => {
    const res = await post(app, call(5), 'fl_wrong');
    expect(res.status).toBe(401);
    expect(res.headers['x-ratelimit-remaining']).toBeUndefined();
  });
});

describe('Host and Origin validation', () => {
  let built: TestApp | undefined;
  afterEach(async () => {
    await built?.release();
    built = undefined;
  });

  test('with ALLOWED_HOSTS set, a foreign Host gets 403 before auth; the allowed one passes', async () => {
    const { app } = (built = await buildTestApp({ clock, env: { ALLOWED_HOSTS: 'mcp.example.com' } }));
    const foreign = await post(app, call(1)).set('Host', 'evil.example');
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, data: { reason: 'host_not_allowed' } } });
    expect(foreign.headers['x-ratelimit-remaining']).toBeUndefined();

    const allowed = await post(app, call(2)).set('Host', 'mcp.example.com');
    expect(allowed.status).toBe(200);
    const withPort = await post(app, call(3)).set('Host', 'MCP.example.com:443');
    expect(withPort.status).toBe(200);
  });

  test('with ALLOWED_HOSTS set, a browser Origin from elsewhere gets 403', async () => {
    const { app } = (built = await buildTestApp({ clock, env: { ALLOWED_HOSTS: 'mcp.example.com' } }));
    const res = await post(app, call(1)).set('Host', 'mcp.example.com').set('Origin', 'https://evil.example');
    expect(res.status).toBe(403);
    expect(res.body.error.data).toEqual({ reason: 'origin_not_allowed' });
    const same = await post(app, call(2)).set('Host', 'mcp.example.com').set('Origin', 'https://mcp.example.com');
    expect(same.status).toBe(200);
  });

  test('with ALLOWED_HOSTS empty, a request arriving on loopback must name localhost (DNS-rebinding protection)', async () => {
    const { app } = (built = await buildTestApp({ clock }));
    expect((await post(app, call(1)).set('Host', 'rebound.evil.example')).status).toBe(403);
    expect((await post(app, call(2)).set('Host', 'localhost:8080')).status).toBe(200);
    expect((await post(app, call(3)).set('Host', '[::1]:8080')).status).toBe(200);
  });
});

describe('failures', () => {
  let built: TestApp | undefined;
  afterEach(async () => {
    await built?.release();
    built = undefined;
  });

  test('a limiter fault is a 500 JSON-RPC internal error with no stack trace or error text, in the body or the log', async () => {
    const config = loadConfig({...PRICED_STATUS });
    const logger = createCapturingLogger();
    const secretText = 'redis://user:hunter2@cache.internal:6379';
    const limiter: RateLimiter = {
      backend: 'memory',
      policies: config.rateLimit.defaultTier.policies,
      failurePolicy: 'fail-open',
      consume: () => Promise.reject(new Error(`connect failed: ${secretText}`)),
      refund: async () => undefined,
      whenReady: async () => true,
      close: async () => undefined,
    };
    const app = createApp({ config, limiter, logger, authMiddleware: standInAuth({ [GOOD_SECRET]: TEST_TOKEN }) });
    const res = await post(app, call(11));
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ jsonrpc: '2.0', id: 11, error: { code: -32603, message: 'Internal error' } });
    expect(res.text).not.toContain('hunter2');
    expect(res.text).not.toMatch(/\bat .*\.ts/);
    const logged = JSON.stringify(logger.entries);
    expect(logger.entries.some((e) => e.fields.event === 'http.unhandled_error')).toBe(true);
    expect(logged).not.toContain('hunter2');
  });

  test('a tool that throws answers a generic tool error; its message stays out of the response and the log', async () => {
    const broken = defineTool({
      name: 'broken',
      title: 'Broken',
      description: 'Always fails.',
      outputSchema: {},
      run: () => {
        throw new Error('db password is hunter2');
      },
    });
    const { app, logger } = (built = await buildTestApp({ tools: [broken] }));
    const res = await post(app, call(12, 'broken'));
    expect(res.status).toBe(200);
    expect(res.body.result).toEqual({ isError: true, content: [{ type: 'text', text: 'The broken tool failed; try again later.' }] });
    expect(JSON.stringify(logger.entries)).not.toContain('hunter2');
    expect(logger.entries.some((e) => e.fields.event === 'mcp.tool_error' && e.fields.tool === 'broken')).toBe(true);
  });

  test('a token naming an unknown tier is counted under the default tier, with one warning', async () => {
    const stray = { ...TEST_TOKEN, id: 'tok_stray', tier: 'retired-gold' };
    const { app, logger } = (built = await buildTestApp({ clock, tokens: { [GOOD_SECRET]: stray } }));
    const first = await post(app, call(1));
    await post(app, call(2));
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-policy']).toBe('"default";q=120;w=60');
    const warnings = logger.entries.filter((e) => e.fields.event === 'ratelimit.unknown_tier');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({ tier: 'retired-gold', tokenId: 'tok_stray' });
  });
});
