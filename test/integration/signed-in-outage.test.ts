import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { createCapturingLogger } from '../support/capturing-logger';
import { startJwksServer, type JwksServer } from '../support/jwks-server';
import { startRedisServer, type RedisServer } from '../support/redis-server';

/**
 * A signed-in caller's first sign-in while the shared store is frozen
 * (SIGSTOP): the failed sign-in reservation and the call meet the store's
 * deadline and then the failure policy, exactly as a flk_ token does:
 * fail-open answers from the local window, fail-closed answers 503 and
 * never verifies a token it could not reserve for.
 */
const PROJECT = 'demo-firelimit';
const ISSUER = `https://securetoken.google.com/${PROJECT}`;
const ACCEPT = 'application/json, text/event-stream';
const whoami = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } };

let dir: string;
let jwks: JwksServer;
let redis: RedisServer;
const services: Service[] = [];

const idToken = (uid: string) => {
  const sec = Math.floor(Date.now() / 1000);
  return jwks.sign('key-1', { iss: ISSUER, aud: PROJECT, sub: uid, auth_time: sec - 60, iat: sec - 10, exp: sec + 3600 });
};

async function serviceWith(failurePolicy: 'fail-open' | 'fail-closed'): Promise<Service> {
  const config = loadConfig({
    RATE_LIMIT_BACKEND: 'redis',
    REDIS_URL: redis.url,
    RATE_LIMIT_TIMEOUT_MS: '300',
    RATE_LIMIT_FAILURE_POLICY: failurePolicy,
    TOKENS_FILE: path.join(dir, `tokens-${failurePolicy}.json`),
    AUTH_ISSUERS_FILE: path.join(dir, 'issuers.json'),
  });
  const service = await buildService(config, { logger: createCapturingLogger() });
  services.push(service);
  return service;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-signed-in-outage-'));
  [jwks, redis] = await Promise.all([startJwksServer(['key-1']), startRedisServer()]);
  writeFileSync(path.join(dir, 'issuers.json'), JSON.stringify({ issuers: [{ preset: 'firebase', projectId: PROJECT, jwksUrl: jwks.url }] }));
});

afterAll(async () => {
  redis?.resume();
  for (const service of services) await service.release();
  await redis?.close();
  await jwks?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('fail-open: a first sign-in while Redis is frozen is answered from the local window after the deadline', async () => {
  const service = await serviceWith('fail-open');
  const token = await idToken('frozen-open');
  redis.suspend();
  try {
    const res = await request(service.app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set('Authorization', `Bearer ${token}`).send(JSON.stringify(whoami));
    expect(res.status).toBe(200);
    expect(res.body.result.structuredContent.tier).toBe('default');
  } finally {
    redis.resume();
  }
});

test('fail-closed: a first sign-in while Redis is frozen gets 503, and the key set is never fetched for it', async () => {
  const service = await serviceWith('fail-closed');
  const token = await idToken('frozen-closed');
  const fetchesBefore = jwks.fetches();
  redis.suspend();
  try {
    const res = await request(service.app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set('Authorization', `Bearer ${token}`).send(JSON.stringify(whoami));
    expect(res.status).toBe(503);
    // The limiter's own hint, its next probe of the backend (RATE_LIMIT_PROBE_INTERVAL_MS, 5 s), as a refused call gets (ADR 0045).
    expect(res.headers['retry-after']).toBe('5');
    expect(jwks.fetches()).toBe(fetchesBefore);
  } finally {
    redis.resume();
  }
});
