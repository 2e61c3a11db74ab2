import { assertValidKey } from '../../window/key';
import { holderIdOf, type UpstreamCaller } from '../../schedule/upstream-holder';
import { assertValidUpstreamPolicy, type UpstreamPolicy } from '../../schedule/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../../schedule/upstream-quota-store';
import { scheduleUpstream } from '../../schedule/upstream-schedule';
import { formatUpstreamState, parseUpstreamState, type UpstreamState } from '../../schedule/upstream-state';
import type { SqliteWindowStore } from './sqlite-store';

export interface SqliteUpstreamQuotaStoreOptions {
  /** The limit store whose connection (file, busy timeout) this shares. */
  readonly sqlite: SqliteWindowStore;
  /** Quota keys of this deployment, apart from any other in the file. Default 'upstream'. */
  readonly namespace?: string;
}

const SELECT = 'SELECT value FROM firelimit_upstream WHERE namespace = ? AND key = ?';
const UPSERT = 'INSERT INTO firelimit_upstream (namespace, key, value) VALUES (?, ?, ?) ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value';

/**
 * The upstream quota in the SQLite file: the pure scheduleUpstream inside one
 * BEGIN IMMEDIATE transaction per call on the quota key's row, so every
 * process on the file schedules on one cursor; a rejection writes nothing.
 * Rows are never swept: quota keys come from config, as few as its quotas
 * (the memory store keeps them for good too), and a lagging caller must never
 * find a forgotten cursor.
 */
export class SqliteUpstreamQuotaStore implements UpstreamQuotaStore {
  readonly backend = 'sqlite' as const;
  private readonly sqlite: SqliteWindowStore;
  private readonly namespace: string;

  constructor(options: SqliteUpstreamQuotaStoreOptions) {
    this.sqlite = options.sqlite;
    this.namespace = options.namespace ?? 'upstream';
    if (this.namespace === '') throw new TypeError('SqliteUpstreamQuotaStore: namespace must not be empty');
  }

  schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, restore: UpstreamState | null = null): Promise<UpstreamScheduled> {
    try {
      return Promise.resolve(this.scheduleSync(key, nowMs, caller, policy, restore));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  scheduleSync(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, restore: UpstreamState | null = null): UpstreamScheduled {
    assertValidKey(key);
    assertValidUpstreamPolicy(policy);
    if (!Number.isSafeInteger(nowMs) || nowMs < 0) throw new RangeError(`nowMs must be a non-negative integer, got ${nowMs}`);
    const connection = this.sqlite.connection;
    return connection.immediate(() => {
      const row = connection.statement(SELECT).get(this.namespace, key);
      // A state the file holds wins over the caller's restore (docs/adr/0044); junk reads as none.
      const stored = typeof row?.value === 'string' ? parseUpstreamState(row.value) : null;
      const state = stored ?? restore;
      const { outcome, next } = scheduleUpstream(state, nowMs, holderIdOf(caller), policy, caller.claimSlotAtMs ?? null);
      if (next !== null) connection.statement(UPSERT).run(this.namespace, key, formatUpstreamState(next));
      return { outcome, state: next ?? state };
    });
  }

  /** The state held for `key` (null: none), without touching it. */
  peek(key: string): string | null {
    const value = this.sqlite.connection.statement(SELECT).get(this.namespace, key)?.value;
    return typeof value === 'string' ? value : null;
  }

  /** The connection belongs to the limit store; closing it is the owner's call. */
  async close(): Promise<void> {}
}
