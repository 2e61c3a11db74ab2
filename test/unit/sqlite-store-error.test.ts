import { SQLITE_BUSY, SQLITE_IO, SQLITE_MISCONFIGURED, SqliteStoreError, sqliteStoreErrorOf } from '../../src/library/backends/sqlite/sqlite-store-error';

// SQLite's failures are classified by its result code (node:sqlite's `errcode`), never by the text, so the
// outage guard and the logs see the same codes on every runtime. Pure: runs on Node 20 too.

/** What node:sqlite throws: code ERR_SQLITE_ERROR, SQLite's extended result code and its text. */
const sqliteError = (errcode: number, errstr = 'sqlite says no'): Error => Object.assign(new Error(errstr), { code: 'ERR_SQLITE_ERROR', errcode, errstr });

test.each([
  [5, 'SQLITE_BUSY', SQLITE_BUSY],
  [261, 'SQLITE_BUSY_RECOVERY', SQLITE_BUSY],
  [517, 'SQLITE_BUSY_SNAPSHOT', SQLITE_BUSY],
  [6, 'SQLITE_LOCKED', SQLITE_BUSY],
  [8, 'SQLITE_READONLY', SQLITE_MISCONFIGURED],
  [1032, 'SQLITE_READONLY_DBMOVED', SQLITE_MISCONFIGURED],
  [14, 'SQLITE_CANTOPEN', SQLITE_MISCONFIGURED],
  [3, 'SQLITE_PERM', SQLITE_MISCONFIGURED],
  [26, 'SQLITE_NOTADB', SQLITE_MISCONFIGURED],
  [11, 'SQLITE_CORRUPT', SQLITE_MISCONFIGURED],
  [10, 'SQLITE_IOERR', SQLITE_IO],
  [3850, 'SQLITE_IOERR_LOCK', SQLITE_IO],
  [13, 'SQLITE_FULL', SQLITE_IO],
  [7, 'SQLITE_NOMEM', SQLITE_IO],
])('errcode %i (%s) is %s, with the result code kept', (errcode, _name, code) => {
  const classified = sqliteStoreErrorOf(sqliteError(errcode), '/srv/.firelimit/limits.sqlite', 500);
  expect(classified).toBeInstanceOf(SqliteStoreError);
  expect(classified).toMatchObject({ name: 'SqliteStoreError', code, sqliteCode: errcode });
});

test('a busy file says how long it waited and which knob sets that', () => {
  expect((sqliteStoreErrorOf(sqliteError(5), '/srv/l.sqlite', 500) as Error).message).toBe(
    'sqlite file /srv/l.sqlite stayed locked by another writer for the whole busy timeout (500 ms, RATE_LIMIT_TIMEOUT_MS)',
  );
});

test.each([
  [8, /point SQLITE_PATH at a file in a directory this process can write \(now \/srv\/l\.sqlite\)/],
  [26, /\/srv\/l\.sqlite is not a firelimit SQLite database \(or is corrupt\); point SQLITE_PATH at a new file/],
])('a misconfiguration (errcode %i) names SQLITE_PATH and the fix', (errcode, hint) => {
  expect((sqliteStoreErrorOf(sqliteError(errcode), '/srv/l.sqlite', 500) as Error).message).toMatch(hint);
});

test.each([
  ['a RangeError of a bad cost', new RangeError('cost must be a non-negative integer')],
  ['a node:sqlite error without a result code', Object.assign(new Error('database is not open'), { code: 'ERR_INVALID_STATE' })],
  ['a string', 'boom'],
  ['undefined', undefined],
])('%s is not SQLite\'s and comes out as thrown', (_, error) => {
  expect(sqliteStoreErrorOf(error, '/srv/l.sqlite', 500)).toBe(error);
});
