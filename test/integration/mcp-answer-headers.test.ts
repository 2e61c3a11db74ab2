import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { silentLogger } from '../../src/shared/logger';
import { buildService, type Service } from '../../src/service/build-service';
import { TokenService } from '../../src/tokens/token-service';

// Mid-minute and still: 30 s left in every window.
const FROZEN_MS = Date.UTC(2026, 11, 1, 12, 0, 30);
const ACCEPT = 'application/json, text/event-stream';
const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } });

let dir: string;
let service: Service;
let secret: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-answer-headers-'));
  service = await buildService(
    loadConfig({
      TOKENS_FILE: path.join(dir, 'tokens.json'),
      RATE_LIMIT_PER_MINUTE: '50',
      AUTH_FAILURES_PER_MINUTE: '7',
      UNAUTHENTICATED_PER_MINUTE: '9',
      REFUSED_REQUESTS_PER_MINUTE: '5',
    }),
    { logger: silentLogger, clock: () => FROZEN_MS },
  );
  ({ secret } = await new TokenService({ store: service.tokenStore, tiers: ['default'] }).create({ name: 'headers' }));
});
afterEach(async () => {
  await service.release();
  await rm(dir, { recursive: true, force: true });
});

function post(body: string, fields: Record<string, string> = {}) {
  return request(service.app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set(fields).send(body);
}
const withToken = (fields: Record<string, string> = {}) => ({ Authorization: `Bearer ${secret}`, ...fields });

function budgetHeaders(res: request.Response): Record<string, string | undefined> {
  return {
    limit: res.headers['x-ratelimit-limit'],
    remaining: res.headers['x-ratelimit-remaining'],
    policy: res.headers['ratelimit-policy'],
    state: res.headers.ratelimit,
  };
}

test('a 401 without a token carries the per-address budget of requests without a token, with this one counted', async () => {
  const res = await post(call);
  expect(res.status).toBe(401);
  expect(budgetHeaders(res)).toEqual({ limit: '9', remaining: '8', policy: '"unauthenticated";q=9;w=60', state: '"unauthenticated";r=8;t=30' });
});

test('a 401 for a wrong token carries the per-address budget of failed sign-ins, with this failure counted', async () => {
  // Well formed (flk_ and 43 base64url characters) but no token's.
  const unknown = `flk_${'A'.repeat(43)}`;
  const first = await post(call, { Authorization: `Bearer ${unknown}` });
  const again = await post(call, { Authorization: `Bearer ${unknown}` });
  expect([first.status, again.status]).toEqual([401, 401]);
  expect(budgetHeaders(first)).toMatchObject({ limit: '7', remaining: '6', policy: '"auth-failures";q=7;w=60' });
  // The same wrong secret again is not charged again, and says so.
  expect(budgetHeaders(again)).toMatchObject({ remaining: '6', policy: '"auth-failures";q=7;w=60' });
});

test.each([
  ['400 for JSON that does not parse', '{"jsonrpc":', {}, 400],
  ['400 for a message that is not JSON-RPC', '{"jsonrpc":"2.0","id":1}', {}, 400],
  ['415 for a body that is not JSON', call, { 'Content-Type': 'text/plain' }, 415],
  ['406 for an Accept without JSON', call, { Accept: 'text/html' }, 406],
])('a %s carries the token\'s refused-request budget, counting down, and never the published limit', async (_label, body, fields, status) => {
  const first = await post(body, withToken(fields));
  const second = await post(body, withToken(fields));
  expect([first.status, second.status]).toEqual([status, status]);
  expect(budgetHeaders(first)).toEqual({ limit: '5', remaining: '4', policy: '"refused-requests";q=5;w=60', state: '"refused-requests";r=4;t=30' });
  expect(budgetHeaders(second)).toMatchObject({ remaining: '3' });
  // A served call afterwards carries the published limit, untouched by the refusals.
  const served = await post(call, withToken());
  expect(served.status).toBe(200);
  expect(budgetHeaders(served)).toMatchObject({ limit: '50', remaining: '49', policy: '"default";q=50;w=60' });
});

test('a 405 on /mcp (GET: no stream on a stateless server) carries none: nothing counted it', async () => {
  const res = await request(service.app).get('/mcp').set('Authorization', `Bearer ${secret}`);
  expect(res.status).toBe(405);
  expect(res.headers.allow).toBe('POST');
  expect(budgetHeaders(res)).toEqual({ limit: undefined, remaining: undefined, policy: undefined, state: undefined });
});
