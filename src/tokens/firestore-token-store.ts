import type { DocumentSnapshot, Firestore } from 'firebase-admin/firestore';
import type { TokenRecord, TokenStore } from './token-record';
import { CorruptTokenRecordError, parseTokenRecord } from './token-record-schema';
import { hashesEqual } from './token-secret';

/** The production collection. firestore.rules deny every client; only the Admin SDK reads it. */
export const TOKENS_COLLECTION = 'apiTokens';

export interface FirestoreTokenStoreOptions {
  readonly firestore: Firestore;
  /** Default 'apiTokens'. Tests use their own so runs against one emulator never meet. */
  readonly collection?: string;
}

/** gRPC status code firebase-admin's Firestore errors carry for a missing document. */
const GRPC_NOT_FOUND = 5;

/**
 * Token records in Firestore: one document per token, document id = token id,
 * fields = the record (including `secretHash`, queried by equality; Firestore
 * indexes single fields automatically).
 *
 * Times are stored as epoch milliseconds (numbers), exactly as in the record,
 * so the file and Firestore stores hold the same shape.
 *
 * `close()` does nothing: the Firestore instance belongs to the firebase-admin
 * App that was passed in, and whoever created the App deletes it on shutdown.
 */
export class FirestoreTokenStore implements TokenStore {
  private readonly firestore: Firestore;
  readonly collection: string;

  constructor(options: FirestoreTokenStoreOptions) {
    this.firestore = options.firestore;
    this.collection = options.collection ?? TOKENS_COLLECTION;
  }

  async create(record: TokenRecord): Promise<void> {
    const checked = parseTokenRecord(record, 'create');
    // create() fails with ALREADY_EXISTS rather than overwriting another token with the same id.
    await this.doc(checked.id).create({ ...checked, scopes: [...checked.scopes] });
  }

  async findByHash(secretHash: string): Promise<TokenRecord | undefined> {
    // Two, not one: a second document with the same hash (a console edit, a bad import) must not let the
    // first one Firestore happens to return authenticate.
    const snapshot = await this.firestore.collection(this.collection).where('secretHash', '==', secretHash).limit(2).get();
    const [doc, other] = snapshot.docs;
    if (doc === undefined) return undefined;
    if (other !== undefined) {
      throw new CorruptTokenRecordError(this.collection, `documents ${doc.id} and ${other.id} share a secretHash; neither is used until one is removed`);
    }
    const record = this.parse(doc);
    // The index lookup is an equality match; confirm it in constant time so no code path compares hashes byte by byte.
    return hashesEqual(record.secretHash, secretHash) ? record : undefined;
  }

  async get(id: string): Promise<TokenRecord | undefined> {
    if (!isUsableDocId(id)) return undefined;
    const snapshot = await this.doc(id).get();
    return snapshot.exists ? this.parse(snapshot) : undefined;
  }

  async list(): Promise<TokenRecord[]> {
    const snapshot = await this.firestore.collection(this.collection).orderBy('createdAtMs').get();
    return snapshot.docs.map((doc) => this.parse(doc));
  }

  async revoke(id: string, nowMs: number): Promise<boolean> {
    const current = await this.get(id);
    if (current === undefined) return false;
    // Revoking twice keeps the first time: that is when the token stopped being valid.
    if (current.revokedAtMs !== null) return true;
    return this.updateExisting(id, { revokedAtMs: nowMs });
  }

  async update(id: string, changes: { tier?: string; scopes?: readonly string[] }): Promise<boolean> {
    const current = await this.get(id);
    if (current === undefined) return false;
    const merged = parseTokenRecord(
      { ...current, ...(changes.tier !== undefined && { tier: changes.tier }), ...(changes.scopes !== undefined && { scopes: [...changes.scopes] }) },
      `update ${id}`,
    );
    return this.updateExisting(id, { tier: merged.tier, scopes: [...merged.scopes] });
  }

  async close(): Promise<void> {
    // Nothing of our own to release (see the class comment).
  }

  private doc(id: string) {
    return this.firestore.collection(this.collection).doc(id);
  }

  /** update() fails when the document is gone (deleted between our read and write); that is "no such token". */
  private async updateExisting(id: string, data: Record<string, unknown>): Promise<boolean> {
    try {
      await this.doc(id).update(data);
      return true;
    } catch (error) {
      if ((error as { code?: unknown }).code === GRPC_NOT_FOUND) return false;
      throw error;
    }
  }

  private parse(doc: DocumentSnapshot): TokenRecord {
    const record = parseTokenRecord(doc.data(), `${this.collection}/${doc.id}`);
    if (record.id !== doc.id) throw new CorruptTokenRecordError(`${this.collection}/${doc.id}`, `the record's id field says ${record.id}`);
    return record;
  }
}

/** Firestore rejects ids with '/' (a path) and the reserved __x__ form; such an id cannot name a token anyway. */
function isUsableDocId(id: string): boolean {
  return id.length > 0 && id.length <= 1500 && !id.includes('/') && !/^__.*__$/.test(id) && id !== '.' && id !== '..';
}
