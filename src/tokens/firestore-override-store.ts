import type { Firestore } from 'firebase-admin/firestore';
import { parseOverrideRecord, type LimitOverrideRecord, type LimitOverrideStore } from './limit-override-record';

/** The production collection, beside apiTokens; closed to clients like it (firestore.rules). */
export const OVERRIDES_COLLECTION = 'limitOverrides';

/**
 * Overrides in Firestore, one document per target (id: the target's id,
 * URI-encoded, so it is never a path). The record is one JSON string field
 * beside `expiresAtMs`, so replacing a record replaces every field of it
 * (an override without a burst never keeps the previous one's).
 */
export class FirestoreOverrideStore implements LimitOverrideStore {
  constructor(
    private readonly firestore: Firestore,
    readonly collection: string = OVERRIDES_COLLECTION,
  ) {}

  async list(nowMs: number): Promise<LimitOverrideRecord[]> {
    const snapshot = await this.firestore.collection(this.collection).get();
    return snapshot.docs
      .map((doc) => parseOverrideRecord(JSON.parse(String(doc.get('record'))), `${this.collection}/${doc.id}`))
      .filter((r) => r.expiresAtMs === null || r.expiresAtMs > nowMs);
  }

  async put(record: LimitOverrideRecord): Promise<void> {
    await this.doc(record.id).set({ record: JSON.stringify(record), expiresAtMs: record.expiresAtMs });
  }

  async remove(id: string, nowMs: number): Promise<boolean> {
    const ref = this.doc(id);
    const snapshot = await ref.get();
    if (!snapshot.exists) return false;
    const expiresAtMs = snapshot.get('expiresAtMs') as number | null;
    await ref.delete();
    return expiresAtMs === null || expiresAtMs > nowMs;
  }

  async close(): Promise<void> {
    // The Firestore instance belongs to the firebase-admin App its creator deletes.
  }

  private doc(id: string) {
    return this.firestore.collection(this.collection).doc(encodeURIComponent(id));
  }
}
