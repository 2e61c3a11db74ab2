/** Stable codes, as RedisStoreError's: callers and logs tell failures apart without reading messages. */
export const SQLITE_BUSY = 'ERR_FIRELIMIT_SQLITE_BUSY';
/** The disk or the host (I/O error, disk full), which may recover. */
export const SQLITE_IO = 'ERR_FIRELIMIT_SQLITE_IO';
/**
 * The file answered, and the answer says the deployment is wrong (read-only,
 * not a database, corrupt, no permission): no retry fixes it, the operator must.
 */
export const SQLITE_MISCONFIGURED = 'ERR_FIRELIMIT_SQLITE_MISCONFIGURED';
export const SQLITE_CLOSED = 'ERR_FIRELIMIT_SQLITE_CLOSED';
export type SqliteStoreErrorCode = typeof SQLITE_BUSY | typeof SQLITE_IO | typeof SQLITE_MISCONFIGURED | typeof SQLITE_CLOSED;

/**
 * The only error the SQLite stores let out. Like RedisStoreError it is thrown
 * to the limiter's outage guard, which answers by the failure policy
 * (fail-open: the local window; fail-closed: backend_unavailable).
 */
export class SqliteStoreError extends Error {
  override readonly name = 'SqliteStoreError';
  constructor(
    readonly code: SqliteStoreErrorCode,
    message: string,
    /** SQLite's extended result code (5 SQLITE_BUSY, 8 SQLITE_READONLY, ...), when SQLite gave one. */
    readonly sqliteCode?: number,
  ) {
    super(message);
  }
}

// Primary result codes (the low byte of an extended code): https://sqlite.org/rescode.html
const BUSY = 5;
const LOCKED = 6;
const READONLY = 8;
const CORRUPT = 11;
const CANTOPEN = 14;
const PERM = 3;
const AUTH = 23;
const NOTADB = 26;
const MISCONFIGURATION_CODES: ReadonlySet<number> = new Set([READONLY, CORRUPT, CANTOPEN, PERM, AUTH, NOTADB]);

/** node:sqlite's errors: `code` ERR_SQLITE_ERROR and SQLite's own result in `errcode`; read that, not the text. */
function sqliteErrcode(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const errcode = (error as { errcode?: unknown }).errcode;
  return typeof errcode === 'number' ? errcode : undefined;
}

/**
 * Classifies what SQLite threw; anything else is returned unchanged. The busy timeout is the deadline, so BUSY
 * means another process held the write lock for all of it: an overload or a
 * stuck writer, answered like a Redis command past its deadline.
 */
export function sqliteStoreErrorOf(error: unknown, path: string, timeoutMs: number): unknown {
  const errcode = sqliteErrcode(error);
  // Not SQLite's (a RangeError of a bad cost from the pure decision, or ours already): as thrown.
  if (errcode === undefined) return error;
  const primary = errcode & 0xff;
  if (primary === BUSY || primary === LOCKED) {
    return new SqliteStoreError(SQLITE_BUSY, `sqlite file ${path} stayed locked by another writer for the whole busy timeout (${timeoutMs} ms, RATE_LIMIT_TIMEOUT_MS)`, errcode);
  }
  if (MISCONFIGURATION_CODES.has(primary)) {
    return new SqliteStoreError(SQLITE_MISCONFIGURED, `${sqliteErrstr(error)} (SQLite code ${errcode}): ${misconfigurationHint(primary, path)}`, errcode);
  }
  // IOERR, FULL, NOMEM, PROTOCOL...: the disk or the host, which may recover.
  return new SqliteStoreError(SQLITE_IO, `sqlite file ${path}: ${sqliteErrstr(error)} (SQLite code ${errcode})`, errcode);
}

function sqliteErrstr(error: unknown): string {
  const errstr = (error as { errstr?: unknown }).errstr;
  return typeof errstr === 'string' ? errstr : 'sqlite error';
}

function misconfigurationHint(primary: number, path: string): string {
  switch (primary) {
    case CANTOPEN:
    case PERM:
    case READONLY:
      return `point SQLITE_PATH at a file in a directory this process can write (now ${path}); the WAL and shared-memory files live beside it`;
    default:
      return `${path} is not a firelimit SQLite database (or is corrupt); point SQLITE_PATH at a new file, or delete this one (it holds only limit counters)`;
  }
}
