import { createTokenStore } from '../../src/tokens/create-token-store';
import { FirestoreTokenStore } from '../../src/tokens/firestore-token-store';
import { CachedTokenVerifier, TokenStoreUnavailableError } from '../../src/tokens/cached-token-verifier';
import { CorruptTokenRecordError } from '../../src/tokens/token-record-schema';
import { TokenService } from '../../src/tokens/token-service';
import {
  createFirestoreTestApp,
  startFirestoreTestServer,
  uniqueCollection,
  type FirestoreTestApp,
  type FirestoreTestServer,
} from '../support/firestore-server';
import { describeTokenStoreContract, makeRecord } from '../support/token-store-contract';

let server: FirestoreTestServer;
let client: FirestoreTestApp;

beforeAll(async () => {
  server = await startFirestoreTestServer();
  client = createFirestoreTestApp();
});
afterAll(async () => {
  await client?.close();
  await server?.close();
});

describeTokenStoreContract('FirestoreTokenStore', async () => new FirestoreTokenStore({ firestore: client.firestore, collection: uniqueCollection() }));

describe('FirestoreTokenStore documents', () => {
  it('keeps one document per token, id = token id, with the hash and never the secret', async () => {
    const collection = uniqueCollection();
    const store = new FirestoreTokenStore({ firestore: client.firestore, collection });
    const { secret, ...record } = makeRecord();
    await store.create(record);
    const doc = await client.firestore.collection(collection).doc(record.id).get();
    expect(doc.exists).toBe(true);
    expect(doc.data()).toMatchObject({ secretHash: record.secretHash, tier: 'default', revokedAtMs: null });
    expect(JSON.stringify(doc.data())).not.toContain(secret);
  });

  it('refuses a document someone edited into an invalid record', async () => {
    const collection = uniqueCollection();
    const record = makeRecord();
    const { secret: _s, ...fields } = record;
    await client.firestore.collection(collection).doc(record.id).create({ ...fields, scopes: 'mcp' });
    const store = new FirestoreTokenStore({ firestore: client.firestore, collection });
    await expect(store.findByHash(record.secretHash)).rejects.toBeInstanceOf(CorruptTokenRecordError);
  });

  it('is what createTokenStore picks for TOKEN_STORE=firestore, and serves create → verify → revoke end to end', async () => {
    const store = await createTokenStore(
      { tokens: { store: 'firestore', file: '/unused', cacheTtlMs: 30_000 } },
      { app: client.app, collection: uniqueCollection() },
    );
    expect(store).toBeInstanceOf(FirestoreTokenStore);
    const service = new TokenService({ store, tiers: ['default', 'pro'] });
    const { secret, token } = await service.create({ name: 'ci', tier: 'pro' });
    let nowMs = 0;
    const verifier = new CachedTokenVerifier({ store, ttlMs: 30_000, clock: () => nowMs });
    expect(await verifier.verify(secret)).toEqual({ id: token.id, name: 'ci', tier: 'pro', scopes: ['mcp'] });
    await service.revoke(token.id);
    expect(await verifier.verify(secret)).toBeDefined(); // cached: within the TTL
    nowMs += 30_000;
    expect(await verifier.verify(secret)).toBeUndefined();
  });

  it('refuses to build a firestore store without an App', async () => {
    await expect(createTokenStore({ tokens: { store: 'firestore', file: '/unused', cacheTtlMs: 1 } })).rejects.toThrow(/firebase-admin App/);
  });
});

test('two documents sharing a secretHash are refused as corrupt: neither authenticates', async () => {
  const collection = uniqueCollection();
  const { secret, ...first } = makeRecord();
  const { secret: _unused, ...second } = makeRecord({ secretHash: first.secretHash, tier: 'pro' });
  for (const record of [first, second]) {
    await client.firestore.collection(collection).doc(record.id).create({ ...record, scopes: [...record.scopes] });
  }
  const store = new FirestoreTokenStore({ firestore: client.firestore, collection });
  const error = await store.findByHash(first.secretHash).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CorruptTokenRecordError);
  expect((error as Error).message).toMatch(new RegExp(`^${collection}: documents (${first.id}|${second.id}) and (${first.id}|${second.id}) share a secretHash`));
  expect((error as Error).message).not.toContain(first.secretHash);
  await expect(new CachedTokenVerifier({ store }).verify(secret)).rejects.toBeInstanceOf(TokenStoreUnavailableError);
});
