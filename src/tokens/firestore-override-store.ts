import type { Firestore } from 'firebase-admin/firestore';
import { CorruptOverrideError, parseOverrideRecord, skippedOf, type LimitOverrideRecord, type LimitOverrideStore, type OverrideListing, type SkippedOverride } from './limit-override-record';

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

  async list(nowMs: number): Promise<OverrideListing> {
    const snapshot = await this.firestore.collection(this.collection).get();
    const records: LimitOverrideRecord[] = [];
    const skipped: SkippedOverride[] = [];
    for (const doc of snapshot.docs) {
      const where = `${this.collection}/${doc.id}`;
      try {
        const record = parseOverrideRecord(recordJson(doc.get('record'), where), where);
        if (record.expiresAtMs === null || record.expiresAtMs > nowMs) records.push(record);
      } catch (error) {
        if (!(error instanceof CorruptOverrideError)) throw error;
        skipped.push(skippedOf(error, where));
      }
    }
    return { records, skipped };
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

/** The document's `record` field as JSON; a document edited by hand into something else is one skipped record, not a failed read. */
function recordJson(field: unknown, where: string): unknown {
  try {
    return JSON.parse(String(field));
  } catch {
    throw new CorruptOverrideError(`${where}: the "record" field is not JSON; delete the document or set the override again (npm run limits -- set)`);
  }
}
