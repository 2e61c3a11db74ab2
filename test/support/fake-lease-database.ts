import type { Database } from 'firebase-admin/database';

/** One `transaction` call as the fake saw it. */
export interface FakeTransactionCall {
  readonly path: string;
  readonly applyLocally: boolean | undefined;
}

type Update = (current: unknown) => unknown;

/**
 * The part of firebase's Database that SweepLease uses, in memory:
 * `ref(path).transaction(update, onComplete, applyLocally)`. As RTDB does, an
 * update that returns undefined aborts (committed false, nothing written), and
 * an update may run twice: first on the client's cached view of the leaf (RTDB
 * has null when it has no cache), then, when that view was stale, again on the
 * server's value; only the last run counts.
 */
export class FakeLeaseDatabase {
  readonly values = new Map<string, unknown>();
  readonly calls: FakeTransactionCall[] = [];
  /** Per path, a stale view the next transaction runs on first. */
  readonly staleViews = new Map<string, unknown>();
  /** When set, every transaction rejects with it (a database error). */
  failWith: Error | undefined;

  get database(): Database {
    return this as unknown as Database;
  }

  ref(path: string): { transaction: (update: Update, onComplete?: unknown, applyLocally?: boolean) => Promise<{ committed: boolean }> } {
    return {
      transaction: async (update, _onComplete, applyLocally) => {
        this.calls.push({ path, applyLocally });
        if (this.failWith !== undefined) throw this.failWith;
        if (this.staleViews.has(path)) {
          update(structuredClone(this.staleViews.get(path)));
          this.staleViews.delete(path);
        }
        const next = update(this.values.has(path) ? structuredClone(this.values.get(path)) : null);
        if (next === undefined) return { committed: false };
        this.values.set(path, structuredClone(next));
        return { committed: true };
      },
    };
  }
}
