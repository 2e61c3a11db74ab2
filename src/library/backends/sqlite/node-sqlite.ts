/**
 * The part of `node:sqlite` the SQLite stores use, typed here because the
 * project's @types/node is Node 20's, which has no such module. Loaded lazily
 * (process.getBuiltinModule, never a static import): importing a store file on
 * Node 20 must not crash, only constructing a store may refuse.
 */

export type SqliteValue = null | number | bigint | string | Uint8Array;

export interface SqliteStatement {
  get(...params: SqliteValue[]): Record<string, SqliteValue> | undefined;
  all(...params: SqliteValue[]): Record<string, SqliteValue>[];
  run(...params: SqliteValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
}

export interface SqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
  readonly isOpen: boolean;
  readonly isTransaction: boolean;
}

export interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { readonly open?: boolean }) => SqliteDatabase;
}

/** The earliest Node 22 line with node:sqlite unflagged; Node 23.4+ and 24 have it too. */
export const NODE_SQLITE_MINIMUM = '22.13';

/** Thrown when the runtime has no node:sqlite: a boot refusal that names the remedy. */
export class SqliteUnavailableError extends Error {
  override readonly name = 'SqliteUnavailableError';
  /** The runtime, not the file: distinct from SqliteStoreError's codes, which are about a file. */
  readonly code = 'ERR_FIRELIMIT_SQLITE_UNAVAILABLE';
  constructor(readonly nodeVersion: string) {
    super(sqliteUnavailableMessage(nodeVersion));
  }
}

export function sqliteUnavailableMessage(nodeVersion: string): string {
  return `RATE_LIMIT_BACKEND=sqlite needs Node ${NODE_SQLITE_MINIMUM}+ (node:sqlite); this is Node ${nodeVersion}; run on Node 24 or choose memory/redis/rtdb`;
}

/** How the module is looked up; a parameter so the refusal can be tested on a runtime that has it. */
export type BuiltinLookup = (id: string) => unknown;

const defaultLookup: BuiltinLookup = (id) => (typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule(id) : undefined);

/** The node:sqlite module, or undefined on a runtime without it (Node 20, Node 22 before 22.13 without a flag). */
export function findNodeSqlite(lookup: BuiltinLookup = defaultLookup): NodeSqliteModule | undefined {
  let found: unknown;
  try {
    found = lookup('node:sqlite');
  } catch {
    // Node 22.5-22.12 without --experimental-sqlite: the id is known but loading it throws.
    return undefined;
  }
  if (typeof found !== 'object' || found === null || typeof (found as { DatabaseSync?: unknown }).DatabaseSync !== 'function') return undefined;
  return found as NodeSqliteModule;
}

/** findNodeSqlite, or a SqliteUnavailableError naming this runtime's version. */
export function loadNodeSqlite(lookup: BuiltinLookup = defaultLookup, nodeVersion: string = process.version): NodeSqliteModule {
  const sqlite = findNodeSqlite(lookup);
  if (sqlite === undefined) throw new SqliteUnavailableError(nodeVersion);
  return sqlite;
}
