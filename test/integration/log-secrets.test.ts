import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import express from 'express';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { buildService } from '../../src/service/build-service';
import type { LimitStore } from '../../src/library/limiter/limit-store';
import { createServiceLogger } from '../../src/logging/create-service-logger';
import type { Logger } from '../../src/shared/logger';
import { createRequestLogMiddleware, safeRequestUrl } from '../../src/logging/request-log-middleware';
import { hashSecret } from '../../src/tokens/token-secret';
import { TokenService } from '../../src/tokens/token-service';
import { PRICED_STATUS } from '../support/mcp-test-app';

const ACCEPT = 'application/json, text/event-stream';
const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });

/** A JSON log line, as far as these tests read it. */
interface LoggedEntry {
  readonly severity?: string;
  readonly message?: string;
  readonly event?: string;
  readonly tokenId?: string;
  readonly httpRequest?: { readonly requestUrl?: string; readonly status?: number; readonly latency?: string };
  readonly rateLimit?: { readonly shared?: boolean; readonly reason?: string };
  readonly [key: string]: unknown;
}

/** The service logger in JSON mode writing to a stream the test reads: exactly what Cloud Run would receive. */
function capturedServiceLogger(): { logger: Logger; text: () => string; entries: () => LoggedEntry[] } {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  const logger = createServiceLogger({ log: { format: 'json' }, firebase: { projectId: 'demo-firelimit' } as never }, { output: stream });
  const text = (): string => chunks.join('');
  const entries = (): LoggedEntry[] =>
    text()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LoggedEntry);
  return { logger, text, entries };
}

/** Everything that must never appear in a log line for this secret. */
function expectNoSecrets(text: string, secret: string): void {
  expect(text).not.toContain(secret);
  expect(text).not.toContain(hashSecret(secret));
  expect(text).not.toContain(`Bearer ${secret}`);
  expect(text.toLowerCase()).not.toContain('authorization');
  // Not even a prefix long enough to narrow a search.
  expect(text).not.toContain(secret.slice(0, 12));
}

test('the request log of a bare app holds the request and its trace but no Authorization header, secret or hash', async () => {
  const secret = `flk_SECRETVALUE${'x'.repeat(32)}`;
  const captured = capturedServiceLogger();
  const app = express();
  app.use(createRequestLogMiddleware(captured.logger, { projectId: 'demo-firelimit' }));
  app.use(express.json());
  app.post('/echo', (req, res) => {
    res.json({ got: Object.keys(req.body as object) });
  });

  await request(app)
    .post(`/echo?token=${secret}&page=2`)
    .set('Authorization', `Bearer ${secret}`)
    .set('traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
    .send({ token: secret, password: 'hunter2' })
    .expect(200);
  await request(app).get('/nothing').set('Authorization', `Bearer ${secret}`).set('X-Cloud-Trace-Context', '0af7651916cd43dd8448eb211c80319c/7;o=1');

  expectNoSecrets(captured.text(), secret);
  const requests = captured.entries().filter((e) => e.event === 'http.request');
  expect(requests).toHaveLength(2);
  expect(requests[0]).toMatchObject({
    severity: 'INFO',
    message: 'POST /echo?page=2 200',
    httpRequest: { requestMethod: 'POST', requestUrl: '/echo?page=2', status: 200 },
    'logging.googleapis.com/trace': 'projects/demo-firelimit/traces/4bf92f3577b34da6a3ce929d0e0e4736',
  });
  expect(requests[0]?.httpRequest?.latency).toMatch(/^\d+\.\d{6}s$/);
  expect(requests[1]).toMatchObject({
    httpRequest: { status: 404 },
    'logging.googleapis.com/trace': 'projects/demo-firelimit/traces/0af7651916cd43dd8448eb211c80319c',
  });
});

describe('the real app with the file token store', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'firelimit-log-secrets-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('logs every decision with token id and shared:false, the 429 too, and never the secret', async () => {
    const config = loadConfig({ ...PRICED_STATUS, RATE_LIMIT_PER_MINUTE: '2', TOKENS_FILE: path.join(dir, 'tokens.json'), LOG_FORMAT: 'json', GOOGLE_CLOUD_PROJECT: 'demo-firelimit' });
    const captured = capturedServiceLogger();
    const service = await buildService(config, { logger: captured.logger });
    const { app } = service;
    const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
    try {
      const { secret, token } = await tokens.create({ name: 'log test' });
      const post = (bearer: string, id: number) =>
        request(app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set('Authorization', `Bearer ${bearer}`).send(call(id));
      expect((await post(secret, 1)).status).toBe(200);
      expect((await post(secret, 2)).status).toBe(200);
      expect((await post(secret, 3)).status).toBe(429);
      // A wrong secret one character off, and a malformed one: both 401, both logged without their value.
      const wrong = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
      expect((await post(wrong, 4)).status).toBe(401);
      expect((await post('not-a-token', 5)).status).toBe(401);

      expectNoSecrets(captured.text(), secret);
      expectNoSecrets(captured.text(), wrong);
      const requests = captured.entries().filter((e) => e.event === 'http.request' && e.httpRequest?.requestUrl === '/mcp');
      expect(requests.map((e) => e.httpRequest?.status)).toEqual([200, 200, 429, 401, 401]);
      // The memory backend counts per instance: every decision says so, at INFO (it is not an outage).
      expect(requests.slice(0, 3).map((e) => [e.severity, e.tokenId, e.rateLimit])).toEqual([
        ['INFO', token.id, { allowed: true, limit: 2, remaining: 1, shared: false, reason: 'within_limit', policy: 'default' }],
        ['INFO', token.id, { allowed: true, limit: 2, remaining: 0, shared: false, reason: 'within_limit', policy: 'default' }],
        ['INFO', token.id, { allowed: false, limit: 2, remaining: 0, shared: false, reason: 'limit', policy: 'default' }],
      ]);
      // No decision on a 401: nothing unauthenticated reached the per-token limiter.
      expect(requests.slice(3).map((e) => [e.tokenId, e.rateLimit])).toEqual([
        [undefined, undefined],
        [undefined, undefined],
      ]);
    } finally {
      await service.release();
    }
  });

  test('logs a fail-open answer from the local window as a WARNING with shared:false and its reason', async () => {
    const config = loadConfig({
      RATE_LIMIT_PER_MINUTE: '5',
      TOKENS_FILE: path.join(dir, 'tokens-outage.json'),
      RATE_LIMIT_TIMEOUT_MS: '200',
      RATE_LIMIT_PROBE_INTERVAL_MS: '60000',
      RATE_LIMIT_FAILURE_POLICY: 'fail-open',
    });
    const captured = capturedServiceLogger();
    // A shared store that is down, with an error text quoting credentials, as real client errors sometimes do.
    const downStore: LimitStore = {
      backend: 'redis',
      shared: true,
      consume: () => Promise.reject(new Error('connect ECONNREFUSED redis://:hunter2@cache:6379')),
      adjust: () => Promise.reject(new Error('connect ECONNREFUSED redis://:hunter2@cache:6379')),
      close: async () => undefined,
    };
    // Behind both shared limiters (per token and failed sign-ins), as an outage of the one backend would be.
    const service = await buildService(config, { logger: captured.logger, limitStore: () => downStore });
    const { app } = service;
    const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
    try {
      const { secret, token } = await tokens.create({ name: 'outage test' });
      for (let id = 1; id <= 2; id++) {
        const res = await request(app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set('Authorization', `Bearer ${secret}`).send(call(id));
        expect(res.status).toBe(200);
      }
      expectNoSecrets(captured.text(), secret);
      expect(captured.text()).not.toContain('hunter2');
      const requests = captured.entries().filter((e) => e.event === 'http.request');
      expect(requests.map((e) => [e.severity, e.tokenId, e.rateLimit?.shared, e.rateLimit?.reason])).toEqual([
        ['WARNING', token.id, false, 'local_fallback'],
        ['WARNING', token.id, false, 'local_fallback'],
      ]);
    } finally {
      await service.release();
    }
  });
});

describe('secrets in the URL, through the real request log middleware', () => {
  const secret = `flk_${'S'.repeat(20)}${'x'.repeat(23)}`;
  const hash = hashSecret(secret);
  const encodedSecret = secret.replace('_', '%5F');
  /** Each a way a client has been seen (or could be expected) to put a secret where it does not belong. */
  const urls: readonly [string, string][] = [
    ['in a path segment', `/mcp/${secret}`],
    ['as an unnamed query value', `/mcp?${secret}`],
    ['as the value of an innocent-looking parameter', `/mcp?x=${secret}&page=2`],
    ['as a hash in a parameter', `/mcp?x=${hash}`],
    ['as a hash glued to other word characters', `/mcp?x=${hash}_y`],
    ['percent-encoded in a path segment', `/mcp/${encodedSecret}`],
    ['percent-encoded in a path segment, lower case', `/mcp/${secret.replace('_', '%5f')}`],
    ['with its letters percent-encoded', `/mcp/%66%6c%6b%5f${secret.slice(4)}`],
    ['double percent-encoded', `/mcp?x=${secret.replace('_', '%255F')}`],
    ['percent-encoded in a query value', `/mcp?x=${encodedSecret}`],
    ['behind a percent-encoded sensitive parameter name', `/mcp?t%6Fken=${secret.slice(4)}`],
    ['percent-encoded hash in a path', `/mcp/${hash.slice(0, 10)}%${hash.charCodeAt(10).toString(16)}${hash.slice(11)}`],
  ];

  async function logOf(format: 'json' | 'pretty', url: string): Promise<string> {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
    const logger = createServiceLogger({ log: { format }, firebase: { projectId: 'demo-firelimit' } as never }, { output: stream });
    const app = express();
    app.use(createRequestLogMiddleware(logger, { projectId: 'demo-firelimit' }));
    app.use((_req, res) => {
      res.status(404).end();
    });
    await request(app).post(url);
    return chunks.join('');
  }

  test.each(urls)('a secret %s is not logged, in JSON or in the terminal format', async (_how, url) => {
    for (const format of ['json', 'pretty'] as const) {
      const text = await logOf(format, url);
      expect(text).toContain('POST /mcp');
      expectNoSecrets(text, secret);
      expect(text).not.toContain(secret.slice(4, 24));
      expect(text.toLowerCase()).not.toContain(hash.slice(12));
    }
  });

  test('the logged URL keeps what is harmless and marks what was removed', async () => {
    const entries = (await logOf('json', `/mcp/${encodedSecret}/tools?page=2&x=${hash}&${secret}`))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LoggedEntry)
      .filter((e) => e.event === 'http.request');
    expect(entries.map((e) => [e.message, e.httpRequest?.requestUrl])).toEqual([
      ['POST /mcp/flk_[redacted]/tools?page=2&x=[redacted]&flk_[redacted] 404', '/mcp/flk_[redacted]/tools?page=2&x=[redacted]&flk_[redacted]'],
    ]);
  });

  test('safeRequestUrl itself removes them, so a logger without a redacting sink is safe too', () => {
    for (const [, url] of urls) {
      const safe = safeRequestUrl(url);
      expect(safe).not.toContain(secret.slice(4, 24));
      expect(safe.toLowerCase()).not.toContain(hash.slice(12));
    }
    expect(safeRequestUrl('/mcp/tools%20list?page=2&q=a%2Fb')).toBe('/mcp/tools%20list?page=2&q=a%2Fb');
  });
});
