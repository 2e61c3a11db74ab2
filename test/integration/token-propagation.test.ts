import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig, type Config } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { silentLogger } from '../../src/shared/logger';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { PRICED_STATUS } from '../support/mcp-test-app';

/**
 * Two service instances share one token store, as Cloud Run instances share
 * Firestore; an operator revokes or re-tiers a token from the command line's
 * TokenService. Each instance caches verified tokens for TOKEN_CACHE_TTL_MS,
 * so the change must reach both within that bound, and not be lost after it.
 */
const TTL_MS = 30_000;
const WINDOW_START_MS = 1_700_000_040_000; // a minute boundary
let nowMs = WINDOW_START_MS;
const clock = () => nowMs;

let dir: string;
let config: Config;
let operator: TokenService;
let operatorStore: FileTokenStore;
const instances: Service[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-propagation-'));
  config = loadConfig({
    ...PRICED_STATUS,
    RATE_LIMIT_PER_MINUTE: '120',
    RATE_LIMIT_TIERS: 'pro=600',
    TOKEN_CACHE_TTL_MS: String(TTL_MS),
    TOKENS_FILE: path.join(dir, 'tokens.json'),
  });
  // One clock for each whole instance: stepping it past the TTL expires the verifiers' caches (each test's token is new, so its window is too).
  for (let i = 0; i < 2; i++) instances.push(await buildService(config, { logger: silentLogger, clock }));
  operatorStore = new FileTokenStore({ path: config.tokens.file });
  operator = new TokenService({ store: operatorStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
});

afterAll(async () => {
  await Promise.all(instances.map((instance) => instance.release()));
  await operatorStore.close();
  rmSync(dir, { recursive: true, force: true });
});

function callStatus(instance: Service, secret: string) {
  return request(instance.app)
    .post('/mcp')
    .set('Accept', 'application/json, text/event-stream')
    .set('Content-Type', 'application/json')
    .set('Authorization', `Bearer ${secret}`)
    .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });
}

async function statuses(secret: string): Promise<number[]> {
  return Promise.all(instances.map(async (instance) => (await callStatus(instance, secret)).status));
}

test('a revoked token is refused by every instance once the cache TTL has passed, and not later', async () => {
  nowMs = WINDOW_START_MS;
  const { secret, token } = await operator.create({ name: 'to revoke' });
  expect(await statuses(secret)).toEqual([200, 200]); // both instances now hold it in their caches

  expect(await operator.revoke(token.id)).toBe(true);
  nowMs += TTL_MS - 1;
  // Inside the published bound a cached instance may still accept it.
  expect(await statuses(secret)).toEqual([200, 200]);

  nowMs += 1;
  expect(await statuses(secret)).toEqual([401, 401]);
});

test('a tier change reaches every instance within the TTL: the limit in the headers follows it', async () => {
  nowMs = WINDOW_START_MS + 100_000;
  const { secret, token } = await operator.create({ name: 'to upgrade' });
  for (const instance of instances) {
    expect((await callStatus(instance, secret)).headers['x-ratelimit-limit']).toBe('120');
  }

  expect(await operator.update(token.id, { tier: 'pro' })).toBe(true);
  nowMs += TTL_MS;
  for (const instance of instances) {
    const response = await callStatus(instance, secret);
    expect(response.status).toBe(200);
    expect(response.headers['x-ratelimit-limit']).toBe('600');
    expect(response.headers['ratelimit-policy']).toBe('"pro";q=600;w=60');
  }
});

test('removing the mcp scope turns into 403 on every instance within the TTL', async () => {
  nowMs = WINDOW_START_MS + 200_000;
  const { secret, token } = await operator.create({ name: 'to restrict', scopes: ['mcp', 'reports'] });
  expect(await statuses(secret)).toEqual([200, 200]);

  expect(await operator.update(token.id, { scopes: ['reports'] })).toBe(true);
  nowMs += TTL_MS;
  expect(await statuses(secret)).toEqual([403, 403]);
});
