import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

/**
 * A key set on loopback standing in for an issuer's published keys (Google's
 * securetoken keys for the Firebase preset): it serves the public JWKs of
 * the keys it holds, counts every fetch, and signs tokens with them.
 */
export interface JwksServer {
  readonly url: string;
  /** GETs of the key set so far. */
  readonly fetches: () => number;
  /** Signs `claims` with the key `kid` (RS256 unless told). */
  sign(kid: string, claims: JWTPayload, header?: { alg?: string }): Promise<string>;
  /** Adds a key (a rotation publishes it); it is served from the next fetch. */
  addKey(kid: string): Promise<void>;
  /** The public JWK of a key, e.g. to forge an HMAC "signed" with it. */
  publicJwk(kid: string): JWK;
  /** Answer 503 instead of the keys (an issuer outage). */
  setFailing(failing: boolean): void;
  close(): Promise<void>;
}

export async function startJwksServer(kids: readonly string[] = ['key-1']): Promise<JwksServer> {
  const keys = new Map<string, { privateKey: PrivateKey; publicJwk: JWK }>();
  const addKey = async (kid: string): Promise<void> => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    keys.set(kid, { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } });
  };
  for (const kid of kids) await addKey(kid);
  let fetches = 0;
  let failing = false;
  const server: Server = createServer((req, res) => {
    fetches++;
    if (failing) {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=19000' });
    res.end(JSON.stringify({ keys: [...keys.values()].map((key) => key.publicJwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks`,
    fetches: () => fetches,
    async sign(kid, claims, header = {}) {
      const key = keys.get(kid) ?? [...keys.values()][0];
      if (key === undefined) throw new Error('no key');
      return new SignJWT(claims).setProtectedHeader({ alg: header.alg ?? 'RS256', kid, typ: 'JWT' }).sign(key.privateKey);
    },
    addKey,
    publicJwk(kid) {
      const key = keys.get(kid);
      if (key === undefined) throw new Error(`no key ${kid}`);
      return key.publicJwk;
    },
    setFailing(value) {
      failing = value;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
