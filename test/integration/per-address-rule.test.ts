import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { TokenService } from '../../src/tokens/token-service';
import { createCapturingLogger } from '../support/capturing-logger';
import { startJwksServer, type JwksServer } from '../support/jwks-server';

/**
 * A limits-file rule with "per": "address" counts every caller from one
 * client address together (keyed as the sign-in budget keys it: the trusted
 * X-Forwarded-For hop, IPv6 per /64), so one address cannot farm signed-in
 * identities past its figure; a rule without it stays per caller.
 */
const PROJECT = 'demo-firelimit';
const ISSUER = `https://securetoken.google.com/${PROJECT}`;
const NOW_MS = 1_700_000_010_000;
const ACCEPT = 'application/json, text/event-stream';
const whoami = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } };

let dir: string;
let jwks: JwksServer;
let service: Service;

const idToken = (uid: string) => {
  const sec = Math.floor(NOW_MS / 1000);
  return jwks.sign('key-1', { iss: ISSUER, aud: PROJECT, sub: uid, auth_time: sec - 60, iat: sec - 10, exp: sec + 3600 });
};
const post = (token: string, from: string) =>
  request(service.app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set('X-Forwarded-For', from).set('Authorization', `Bearer ${token}`).send(JSON.stringify(whoami));

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-per-address-'));
  jwks = await startJwksServer(['key-1']);
  writeFileSync(path.join(dir, 'issuers.json'), JSON.stringify({ issuers: [{ preset: 'firebase', projectId: PROJECT, jwksUrl: jwks.url }] }));
  writeFileSync(path.join(dir, 'limits.json'), JSON.stringify({ rules: [{ name: 'one-address', match: { method: 'tools/call' }, per: 'address', limits: [{ limit: 3, window: '1m' }] }] }));
  const config = loadConfig({
    TOKENS_FILE: path.join(dir, 'tokens.json'),
    AUTH_ISSUERS_FILE: path.join(dir, 'issuers.json'),
    LIMITS_FILE: path.join(dir, 'limits.json'),
    TRUST_PROXY_HOPS: '1',
  });
  service = await buildService(config, { logger: createCapturingLogger(), clock: () => NOW_MS });
});

afterAll(async () => {
  await service?.release();
  await jwks?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('five users signed in from one address share its 3 calls a minute; another address has its own', async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await post(await idToken(`farmed-${i}`), '198.51.100.20')).status);
  expect(statuses).toEqual([200, 200, 200, 429, 429]);
  const refused = await post(await idToken('farmed-9'), '198.51.100.20');
  expect(refused.body.error.data).toMatchObject({ reason: 'limit' });
  expect((await post(await idToken('farmed-0'), '198.51.100.21')).status).toBe(200);
});

test('IPv6 addresses in one /64 are one address, as for the sign-in budget', async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await post(await idToken(`v6-${i}`), `2001:db8:1:2::${i + 1}`)).status);
  expect(statuses).toEqual([200, 200, 200, 429]);
  expect((await post(await idToken('v6-9'), '2001:db8:1:3::1')).status).toBe(200);
});

test('it holds flk_ tokens from the address too, and a client cannot escape it by writing its own X-Forwarded-For entry', async () => {
  const tokens = new TokenService({ store: service.tokenStore });
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) {
    const { secret } = await tokens.create({ name: `farm-${i}` });
    // The client-written left entry changes every time; the trusted right one (the proxy's view) does not.
    statuses.push((await post(secret, `10.9.9.${i}, 203.0.113.50`)).status);
  }
  expect(statuses).toEqual([200, 200, 200, 429]);
});
