import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { subjectCallerId } from '../../src/tokens/subject-id';
import { runLimitsCli } from '../../src/cli/limits-cli';
import { createCapturingLogger } from '../support/capturing-logger';
import { startJwksServer, type JwksServer } from '../support/jwks-server';

/**
 * Firebase Authentication ID tokens with the preset, verified against a key
 * set on loopback standing in for Google's: accepted and limited per `sub`;
 * every kind of forgery refused with 401 and counted as a failed sign-in.
 */
const PROJECT = 'demo-firelimit';
const ISSUER = `https://securetoken.google.com/${PROJECT}`;
const COOLDOWN_MS = 30_000;
const START_MS = 1_700_000_010_000; // 10 s into a minute window
const ACCEPT = 'application/json, text/event-stream';
const whoami = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } });

let dir: string;
let jwks: JwksServer;
let service: Service;
let server: Server;
let baseUrl: string;
let nowMs = START_MS;
let cliEnv: NodeJS.ProcessEnv;
const logger = createCapturingLogger();

function claims(uid: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const sec = Math.floor(nowMs / 1000);
  return { iss: ISSUER, aud: PROJECT, sub: uid, user_id: uid, auth_time: sec - 60, iat: sec - 10, exp: sec + 3600, firebase: { sign_in_provider: 'password' }, ...overrides };
}

async function post(token: string | undefined, body: unknown = whoami(1), from = '198.51.100.7') {
  const req = request(service.app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set('X-Forwarded-For', from);
  if (token !== undefined) req.set('Authorization', `Bearer ${token}`);
  return req.send(JSON.stringify(body));
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-firebase-'));
  jwks = await startJwksServer(['key-1']);
  const issuersFile = path.join(dir, 'issuers.json');
  writeFileSync(issuersFile, JSON.stringify({ issuers: [{ preset: 'firebase', projectId: PROJECT, jwksUrl: jwks.url, jwksCooldownMs: COOLDOWN_MS, tierClaim: 'plan' }] }));
  const config = loadConfig({
    RATE_LIMIT_PER_MINUTE: '3',
    RATE_LIMIT_TIERS: 'subscriber=5',
    TOKENS_FILE: path.join(dir, 'tokens.json'),
    AUTH_ISSUERS_FILE: issuersFile,
    AUTH_FAILURES_PER_MINUTE: '5',
    UNAUTHENTICATED_PER_MINUTE: '100000',
    TRUST_PROXY_HOPS: '1',
    LIMIT_OVERRIDES_POLL_MS: '100',
    // The longest verdict cache, so a token that expires inside it shows that its entry ends at exp.
    TOKEN_CACHE_TTL_MS: '60000',
  });
  cliEnv = { TOKENS_FILE: path.join(dir, 'tokens.json'), AUTH_ISSUERS_FILE: issuersFile, RATE_LIMIT_TIERS: 'subscriber=5' };
  service = await buildService(config, { logger, clock: () => nowMs });
  server = service.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await service?.release();
  await jwks?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Firebase ID tokens with the preset', () => {
  it('accepts a token signed by the published keys: whoami names the caller of (iss, sub), never the token', async () => {
    const token = await jwks.sign('key-1', claims('alice-uid', { plan: 'subscriber' }));
    const res = await post(token);
    expect(res.status).toBe(200);
    expect(res.body.result.structuredContent).toEqual({ tokenId: subjectCallerId(ISSUER, 'alice-uid'), name: `signed in with ${ISSUER}`, tier: 'subscriber', scopes: ['mcp'] });
    expect(JSON.stringify(logger.entries)).not.toContain(token.split('.')[2]);
  });

  it('answers a request without a token 401 naming both ways in, without resource_metadata (Firebase runs no authorization server to discover)', async () => {
    const res = await post(undefined, whoami(1), '203.0.113.40');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="firelimit"');
    expect(res.body.error.message).toContain(`Firebase Authentication ID tokens of project ${PROJECT}`);
    expect(res.body.error.message).toContain('flk_');
    expect((await request(service.app).get('/.well-known/oauth-protected-resource/mcp')).status).toBe(404);
  });

  it('limits per sub: two tokens of one user share its limit, another user has its own, and a claim naming no tier gets the default', async () => {
    nowMs += 60_000; // a fresh window
    const first = await jwks.sign('key-1', claims('bob-uid'));
    const second = await jwks.sign('key-1', claims('bob-uid', { iat: Math.floor(nowMs / 1000) - 5, plan: 'no-such-tier' }));
    const statuses: number[] = [];
    for (const token of [first, second, first, second]) statuses.push((await post(token)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const carol = await jwks.sign('key-1', claims('carol-uid'));
    expect((await post(carol)).status).toBe(200);
    const limited = await post(first);
    expect(limited.headers['x-ratelimit-limit']).toBe('3');
  });

  it('npm run limits -- set --issuer ISS --subject UID overrides one signed-in user\'s limit, on the running service', async () => {
    nowMs += 60_000;
    let stdout = '';
    const io = { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: () => true } };
    const code = await runLimitsCli(['set', '--issuer', ISSUER, '--subject', 'grace-uid', '--per-minute', '1', '--json'], cliEnv, io, { cwd: dir, clock: () => nowMs });
    expect(code).toBe(0);
    expect(JSON.parse(stdout).target).toEqual({ tokenId: subjectCallerId(ISSUER, 'grace-uid') });
    const token = await jwks.sign('key-1', claims('grace-uid'));
    // The watcher polls every 100 ms: wait for the override to be in force, then it holds grace to 1 a minute.
    for (let i = 0; i < 100 && service.overrides.current().size === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect([(await post(token)).status, (await post(token)).status]).toEqual([200, 429]);
    const other = await jwks.sign('key-1', claims('heidi-uid'));
    expect([(await post(other)).status, (await post(other)).status]).toEqual([200, 200]);
  });

  it.each([
    ['another project', { iss: 'https://securetoken.google.com/other-project', aud: 'other-project' }],
    ['this issuer but another audience', { aud: 'other-project' }],
    ['expired beyond the clock tolerance', { exp: Math.floor(START_MS / 1000) - 3600 }],
    ['not valid yet', { nbf: Math.floor(START_MS / 1000) + 3600 }],
    ['issued in the future', { iat: Math.floor(START_MS / 1000) + 3600 }],
    ['without a subject', { sub: '' }],
    ['without auth_time', { auth_time: undefined }],
  ])('refuses a token for %s with 401 invalid_token', async (name, overrides) => {
    const token = await jwks.sign('key-1', claims('mallory', overrides));
    // Each case from its own address: together they would spend one address's failure budget (5).
    const res = await post(token, whoami(1), `203.0.113.${100 + name.length}`);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="firelimit", error="invalid_token"');
  });

  it('refuses alg "none" and an HMAC signature keyed with the public key', async () => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const payload = encode(claims('mallory'));
    const none = `${encode({ alg: 'none', typ: 'JWT' })}.${payload}.`;
    const hmacHeader = encode({ alg: 'HS256', typ: 'JWT', kid: 'key-1' });
    const publicKeyBytes = JSON.stringify(jwks.publicJwk('key-1'));
    const hmac = `${hmacHeader}.${payload}.${createHmac('sha256', publicKeyBytes).update(`${hmacHeader}.${payload}`).digest('base64url')}`;
    const rsaHeader = encode({ alg: 'RS256', typ: 'JWT', kid: 'key-1' });
    const badSignature = `${rsaHeader}.${payload}.${Buffer.alloc(256, 1).toString('base64url')}`;
    for (const token of [none, hmac, badSignature]) {
      const res = await post(token, whoami(1), '203.0.113.2');
      expect(res.status).toBe(401);
    }
  });

  it('stops accepting a verified, cached token once it expires (beyond the tolerance), and refuses one over 8 KiB unparsed', async () => {
    nowMs += 60_000;
    const shortLived = await jwks.sign('key-1', claims('ivan-uid', { exp: Math.floor(nowMs / 1000) + 1 }));
    expect((await post(shortLived, whoami(1), '203.0.113.30')).status).toBe(200);
    nowMs += 32_000; // past exp and the 30 s tolerance, well inside the 60 s cache TTL: the entry ended at exp
    expect((await post(shortLived, whoami(1), '203.0.113.30')).status).toBe(401);
    const fetches = jwks.fetches();
    const huge = await jwks.sign('key-1', claims('ivan-uid', { padding: 'x'.repeat(9000) }));
    const res = await post(huge, whoami(1), '203.0.113.31');
    expect(res.status).toBe(401);
    expect(res.body.error.data).toEqual({ reason: 'malformed_token' });
    expect(jwks.fetches()).toBe(fetches);
  });

  it('counts a failed verification as a failed sign-in for the address, as a bad flk_ secret: then even a good token gets 429', async () => {
    nowMs += 60_000;
    const good = await jwks.sign('key-1', claims('dave-uid'));
    for (let i = 0; i < 5; i++) {
      const forged = await jwks.sign('key-1', claims('mallory', { aud: `other-${i}` }));
      expect((await post(forged, whoami(1), '203.0.113.9')).status).toBe(401);
    }
    const blocked = await post(good, whoami(1), '203.0.113.9');
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.data.reason).toBe('auth_failures');
    expect((await post(good, whoami(1), '203.0.113.10')).status).toBe(200);
  });

  it('refuses 1,000 tokens naming an unknown kid within one second with 401, and the key set is fetched at most once per cooldown', async () => {
    nowMs += 60_000;
    const before = jwks.fetches();
    const forged = await Promise.all(Array.from({ length: 1000 }, (_, i) => jwks.sign('key-1', claims(`mallory-${i}`)).then((token) => {
      // Re-label the signature's kid: a token signed by a key nobody published.
      const [, body, signature] = token.split('.');
      return `${Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: `unknown-${i}` })).toString('base64url')}.${body}.${signature}`;
    })));
    const statuses = new Map<number, number>();
    for (let start = 0; start < forged.length; start += 50) {
      const batch = await Promise.all(forged.slice(start, start + 50).map(async (token, i) => {
        // Each from its own address, so the failure budget does not turn the 401s into 429s.
        const res = await fetch(`${baseUrl}/mcp`, {
          method: 'POST',
          headers: { accept: ACCEPT, 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-forwarded-for': `10.1.${Math.floor((start + i) / 250)}.${(start + i) % 250}` },
          body: JSON.stringify(whoami(1)),
        });
        await res.arrayBuffer();
        return res.status;
      }));
      for (const status of batch) statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 401: 1000 });
    expect(jwks.fetches() - before).toBeLessThanOrEqual(1);

    // A rotation: the issuer publishes key-2; once the cooldown has passed, its tokens verify after one more fetch.
    await jwks.addKey('key-2');
    nowMs += COOLDOWN_MS;
    const rotated = await jwks.sign('key-2', claims('erin-uid'));
    const afterCooldown = jwks.fetches();
    expect((await post(rotated, whoami(1), '203.0.113.20')).status).toBe(200);
    expect(jwks.fetches() - afterCooldown).toBe(1);
  });

  it('answers 503 (not 401) while the issuer cannot be reached and no keys are held, and refunds the reservation', async () => {
    // A fresh service: no keys fetched yet, and the issuer is down.
    jwks.setFailing(true);
    const config = loadConfig({ TOKENS_FILE: path.join(dir, 'tokens-2.json'), FIREBASE_AUTH_PROJECT_ID: PROJECT, AUTH_FAILURES_PER_MINUTE: '2' });
    const other = await buildService({ ...config, auth: { ...config.auth, issuers: config.auth.issuers.map((issuer) => ({ ...issuer, jwksUrl: jwks.url })) } }, { logger, clock: () => nowMs });
    try {
      const token = await jwks.sign('key-1', claims('frank-uid'));
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push((await request(other.app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set('Authorization', `Bearer ${token}`).send(JSON.stringify(whoami(1)))).status);
      }
      // Every attempt refunded: the budget of 2 never turns them into 429s.
      expect(statuses).toEqual([503, 503, 503, 503]);
      jwks.setFailing(false);
      nowMs += COOLDOWN_MS;
      const ok = await request(other.app).post('/mcp').set('Accept', ACCEPT).set('Content-Type', 'application/json').set('Authorization', `Bearer ${token}`).send(JSON.stringify(whoami(1)));
      expect(ok.status).toBe(200);
    } finally {
      jwks.setFailing(false);
      await other.release();
    }
  });
});
