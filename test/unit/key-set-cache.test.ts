import { exportJWK, generateKeyPair, SignJWT, jwtVerify } from 'jose';
import { KeySetCache, KeySetUnavailableError } from '../../src/tokens/key-set-cache';

/** The cache with an injected fetch and clock: every fetch is counted, no server and no sleep. */
async function setup(answers: (url: string) => Response | Promise<Response>) {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  let nowMs = 1_000_000;
  const urls: string[] = [];
  const fetchImpl = (async (input: string | URL | Request) => {
    urls.push(String(input));
    return answers(String(input));
  }) as typeof fetch;
  const sign = (kid: string) => new SignJWT({ sub: 'u' }).setProtectedHeader({ alg: 'ES256', kid }).sign(privateKey);
  return { jwk, sign, urls, fetchImpl, clock: () => nowMs, advance: (ms: number) => (nowMs += ms) };
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

describe('KeySetCache', () => {
  it('remembers a failed fetch: while the issuer is down, lookups within the cooldown fetch nothing and answer unavailable', async () => {
    let down = true;
    const t = await setup(() => (down ? json({}, 503) : json({ keys: [t.jwk] })));
    const cache = new KeySetCache({ issuer: 'https://idp.example', jwksUrl: 'https://idp.example/jwks', maxAgeMs: 600_000, cooldownMs: 30_000, fetch: t.fetchImpl, clock: t.clock });
    const token = await t.sign('k1');
    for (let i = 0; i < 20; i++) await expect(jwtVerify(token, cache.getKey)).rejects.toBeInstanceOf(KeySetUnavailableError);
    expect(t.urls).toHaveLength(1);
    down = false;
    t.advance(29_999);
    await expect(jwtVerify(token, cache.getKey)).rejects.toBeInstanceOf(KeySetUnavailableError);
    t.advance(1);
    await expect(jwtVerify(token, cache.getKey)).resolves.toMatchObject({ payload: { sub: 'u' } });
    expect(t.urls).toHaveLength(2);
  });

  it('shares one fetch among concurrent lookups, and keeps old keys when a refresh fails', async () => {
    let down = false;
    const t = await setup(() => (down ? json({}, 500) : json({ keys: [t.jwk] })));
    const cache = new KeySetCache({ issuer: 'https://idp.example', jwksUrl: 'https://idp.example/jwks', maxAgeMs: 60_000, cooldownMs: 30_000, fetch: t.fetchImpl, clock: t.clock });
    const token = await t.sign('k1');
    await Promise.all(Array.from({ length: 50 }, () => jwtVerify(token, cache.getKey)));
    expect(t.urls).toHaveLength(1);
    down = true;
    t.advance(60_000);
    await expect(jwtVerify(token, cache.getKey)).resolves.toBeDefined();
    expect(t.urls).toHaveLength(2);
  });

  it('finds jwks_uri through discovery, and refuses a discovery document that names another issuer', async () => {
    const t = await setup((url) =>
      url.endsWith('/.well-known/openid-configuration') ? json({ issuer: url.includes('evil') ? 'https://someone-else.example' : 'https://idp.example/tenant', jwks_uri: 'https://idp.example/keys' }) : json({ keys: [t.jwk] }),
    );
    const good = new KeySetCache({ issuer: 'https://idp.example/tenant', jwksUrl: undefined, maxAgeMs: 600_000, cooldownMs: 30_000, fetch: t.fetchImpl, clock: t.clock });
    await expect(jwtVerify(await t.sign('k1'), good.getKey)).resolves.toBeDefined();
    expect(t.urls).toEqual(['https://idp.example/tenant/.well-known/openid-configuration', 'https://idp.example/keys']);
    const evil = new KeySetCache({ issuer: 'https://evil.example', jwksUrl: undefined, maxAgeMs: 600_000, cooldownMs: 30_000, fetch: t.fetchImpl, clock: t.clock });
    await expect(jwtVerify(await t.sign('k1'), evil.getKey)).rejects.toBeInstanceOf(KeySetUnavailableError);
  });

  it('does not read a key set larger than 256 KiB', async () => {
    const t = await setup(() => new Response('x'.repeat(300 * 1024), { status: 200 }));
    const cache = new KeySetCache({ issuer: 'https://idp.example', jwksUrl: 'https://idp.example/jwks', maxAgeMs: 600_000, cooldownMs: 30_000, fetch: t.fetchImpl, clock: t.clock });
    await expect(jwtVerify(await t.sign('k1'), cache.getKey)).rejects.toBeInstanceOf(KeySetUnavailableError);
  });
});
