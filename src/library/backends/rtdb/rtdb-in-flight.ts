import type { Database } from 'firebase-admin/database';

/**
 * Transactions on one client still in flight per path. firebase shows a
 * transaction the pending writes of every other transaction at the same path
 * on the same client (it cannot know they will commit), so while any is in
 * flight the client's view may be optimistic. Kept per Database, so every
 * store and sweeper sharing one client sees the others' transactions.
 */
export class InFlightTransactions {
  private readonly counts = new Map<string, number>();

  at(path: string): number {
    return this.counts.get(path) ?? 0;
  }

  /** Counts a transaction on `path` while `run` is pending. */
  async around<T>(path: string, run: () => Promise<T>): Promise<T> {
    this.counts.set(path, this.at(path) + 1);
    try {
      return await run();
    } finally {
      const left = this.at(path) - 1;
      if (left > 0) this.counts.set(path, left);
      else this.counts.delete(path);
    }
  }
}

const byDatabase = new WeakMap<Database, InFlightTransactions>();

/** The one registry for a Database client. */
export function inFlightTransactions(database: Database): InFlightTransactions {
  let registry = byDatabase.get(database);
  if (registry === undefined) {
    registry = new InFlightTransactions();
    byDatabase.set(database, registry);
  }
  return registry;
}
