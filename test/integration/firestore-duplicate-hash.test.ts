import { CachedTokenVerifier, TokenStoreUnavailableError } from '../../src/tokens/cached-token-verifier';
import { FirestoreTokenStore } from '../../src/tokens/firestore-token-store';
import { CorruptTokenRecordError } from '../../src/tokens/token-record-schema';
import {
  createFirestoreTestApp,
  startFirestoreTestServer,
  uniqueCollection,
  type FirestoreTestApp,
  type FirestoreTestServer,
} from '../support/firestore-server';
import { makeRecord } from '../support/token-store-contract';

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
