import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { silentLogger, type Logger } from '../../../shared/logger';
import { loadNodeSqlite, type NodeSqliteModule, type SqliteDatabase, type SqliteStatement } from './node-sqlite';
import { SQLITE_CLOSED, SQLITE_MISCONFIGURED, SqliteStoreError, sqliteStoreErrorOf } from './sqlite-store-error';

export interface SqliteConnectionOptions {
  /** The database file; its directory is created. The WAL (-wal) and shared-memory (-shm) files live beside it. */
  readonly path: string;
  /** SQLite's busy timeout: how long a decision waits for another process's write lock before failing. */
  readonly busyTimeoutMs: number;
  /** node:sqlite itself; default: looked up in this runtime (a SqliteUnavailableError when missing). */
  readonly sqlite?: NodeSqliteModule;
  /** Where a misconfiguration met at runtime is said, once per streak, at ERROR. Default: silent. */
  readonly logger?: Logger;
}

/**
 * The tables of both SQLite stores. WITHOUT ROWID: the primary key is the
 * lookup, so each row lives once, in the key's b-tree. The expiry index is the
 * sweep's; rows are found by key, never by expiry, on the decision path.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS firelimit_limits (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  slot TEXT NOT NULL,
  value TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  PRIMARY KEY (namespace, key, slot)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS firelimit_limits_expiry ON firelimit_limits (namespace, expires_at_ms);
CREATE TABLE IF NOT EXISTS firelimit_upstream (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
`;

/**
 * One connection to one SQLite file, in WAL mode, and the one way to change
 * it: `immediate`, a BEGIN IMMEDIATE transaction run synchronously. IMMEDIATE
 * takes the write lock before reading, so two processes deciding on the file
 * serialise at BEGIN and neither decides on a state the other is changing
 * (a DEFERRED transaction would read, then fail to upgrade with SQLITE_BUSY).
 */
export class SqliteConnection {
  readonly path: string;
  readonly busyTimeoutMs: number;
  private readonly db: SqliteDatabase;
  private readonly statements = new Map<string, SqliteStatement>();
  private readonly logger: Logger;
  /** A misconfiguration was logged and no transaction has committed since. */
  private misconfigurationLogged = false;

  constructor(options: SqliteConnectionOptions) {
    if (typeof options.path !== 'string' || options.path === '') throw new TypeError('SqliteConnection: path must be a non-empty file path');
    if (!Number.isSafeInteger(options.busyTimeoutMs) || options.busyTimeoutMs < 1) {
      throw new RangeError(`SqliteConnection: busyTimeoutMs must be a positive integer, got ${options.busyTimeoutMs}`);
    }
    const sqlite = options.sqlite ?? loadNodeSqlite();
    this.path = path.resolve(options.path);
    this.busyTimeoutMs = options.busyTimeoutMs;
    this.logger = options.logger ?? silentLogger;
    try {
      mkdirSync(path.dirname(this.path), { recursive: true });
    } catch (error) {
      throw new SqliteStoreError(SQLITE_MISCONFIGURED, `cannot create the directory of SQLITE_PATH (${this.path}): ${(error as NodeJS.ErrnoException).code ?? 'error'}; point SQLITE_PATH at a writable place`);
    }
    try {
      this.db = new sqlite.DatabaseSync(this.path);
    } catch (error) {
      throw sqliteStoreErrorOf(error, this.path, this.busyTimeoutMs);
    }
    try {
      // The busy timeout first: switching to WAL and creating the tables take the write lock, which
      // another process opening the same file at the same moment may hold.
      this.db.exec(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`);
      this.db.exec('PRAGMA journal_mode = WAL');
      // NORMAL in WAL mode: a commit survives the process dying; only a power loss may drop the
      // last commits, counters a limiter can afford to lose (docs/adr, the SQLite store).
      this.db.exec('PRAGMA synchronous = NORMAL');
      this.db.exec(SCHEMA);
    } catch (error) {
      this.db.close();
      throw sqliteStoreErrorOf(error, this.path, this.busyTimeoutMs);
    }
  }

  get isOpen(): boolean {
    return this.db.isOpen;
  }

  /** A prepared statement, prepared once per connection. */
  statement(sql: string): SqliteStatement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Runs `body` inside BEGIN IMMEDIATE ... COMMIT and returns its value; on any
   * failure rolls back, so nothing of a failed decision is stored. SQLite's
   * errors come out as SqliteStoreError; the body's own (a bad cost) as thrown.
   * Synchronous: the event loop waits with it, at most the busy timeout.
   */
  immediate<T>(body: () => T): T {
    if (!this.db.isOpen) throw new SqliteStoreError(SQLITE_CLOSED, 'the sqlite store is closed');
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      throw this.reported(sqliteStoreErrorOf(error, this.path, this.busyTimeoutMs));
    }
    try {
      const value = body();
      this.db.exec('COMMIT');
      this.misconfigurationLogged = false;
      return value;
    } catch (error) {
      if (this.db.isTransaction) {
        try {
          this.db.exec('ROLLBACK');
        } catch {
          // SQLite already rolled back (an I/O error ends the transaction); the first error is the one to report.
        }
      }
      throw this.reported(sqliteStoreErrorOf(error, this.path, this.busyTimeoutMs));
    }
  }

  /**
   * The guard's outage line says only that the backend is down; a file made
   * read-only or replaced under the service needs the operator, so this says
   * what to change, once until a decision commits again.
   */
  private reported(error: unknown): unknown {
    if (error instanceof SqliteStoreError && error.code === SQLITE_MISCONFIGURED && !this.misconfigurationLogged) {
      this.misconfigurationLogged = true;
      this.logger.error(error.message, { event: 'ratelimit.sqlite_misconfigured', backend: 'sqlite', sqliteCode: error.sqliteCode });
    }
    return error;
  }

  /** A statement outside any explicit transaction (the sweep): its own implicit one, under the busy timeout. */
  run(sql: string, ...params: (string | number)[]): number {
    if (!this.db.isOpen) throw new SqliteStoreError(SQLITE_CLOSED, 'the sqlite store is closed');
    try {
      return Number(this.statement(sql).run(...params).changes);
    } catch (error) {
      throw sqliteStoreErrorOf(error, this.path, this.busyTimeoutMs);
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}
