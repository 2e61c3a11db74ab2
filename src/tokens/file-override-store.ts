import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseStrictJson } from '../shared/strict-json';
import { CorruptOverrideError, parseOverrideRecord, skippedOf, type LimitOverrideRecord, type LimitOverrideStore, type OverrideListing, type SkippedOverride } from './limit-override-record';
import { isErrno } from './token-file-lock';
import { writeJsonFileAtomically } from './atomic-json-file';
import { LockedWriteQueue } from './locked-write-queue';

/**
 * The largest overrides file read: about 15,000 overrides. Bounded so that a
 * runaway file is a clear refusal, not a poll that stops the event loop for
 * seconds (100,000 records, 21 MB, blocked it 3.4-4.7 s every 5 s); at the
 * bound, the poll after a change takes about 0.2 s (npm run bench -- overrides).
 */
export const MAX_OVERRIDES_FILE_BYTES = 4 * 1_048_576;

/** What one read of the file found, kept while the file is unchanged. */
interface FileContents {
  readonly records: readonly LimitOverrideRecord[];
  readonly skipped: readonly SkippedOverride[];
  /** The skipped entries as written, so a write keeps what it cannot read (a hand edit to fix) instead of dropping it. */
  readonly unreadable: readonly unknown[];
}

const EMPTY: FileContents = { records: [], skipped: [], unreadable: [] };

/**
 * Overrides in one JSON file, written the way the token file is (temporary
 * file renamed into place, a lock file between processes), so the CLI and
 * every running instance on the machine share it. Expired records are
 * dropped from reads at once and from the file on the next write. A poll of
 * an unchanged file costs one stat: the last parse is kept while the file's
 * identity (inode, size, change time) stays the same, and every write renames
 * a new file into place.
 */
export class FileOverrideStore implements LimitOverrideStore {
  readonly path: string;
  private readonly writes: LockedWriteQueue;
  private cached: { readonly identity: string; readonly contents: FileContents } | undefined;

  constructor(filePath: string) {
    this.path = path.resolve(filePath);
    this.writes = new LockedWriteQueue(this.path);
  }

  async list(nowMs: number): Promise<OverrideListing> {
    const contents = await this.readAll();
    return { records: live(contents.records, nowMs), skipped: contents.skipped };
  }

  put(record: LimitOverrideRecord): Promise<void> {
    return this.mutate(record.setAtMs, record.id, (records) => ({ records: [...records.filter((r) => r.id !== record.id), record], result: undefined }));
  }

  remove(id: string, nowMs: number): Promise<boolean> {
    return this.mutate(nowMs, id, (records, unreadableRemoved) => {
      const kept = records.filter((r) => r.id !== id);
      return { records: kept, result: kept.length !== records.length || unreadableRemoved };
    });
  }

  async close(): Promise<void> {
    await this.writes.drained();
  }

  private async readAll(): Promise<FileContents> {
    let identity: string;
    try {
      const stats = await stat(this.path, { bigint: true });
      if (stats.size > BigInt(MAX_OVERRIDES_FILE_BYTES)) {
        throw new CorruptOverrideError(
          `${this.path}: ${stats.size} bytes, more than the ${MAX_OVERRIDES_FILE_BYTES} bytes read (about 15,000 overrides); remove overrides (npm run limits -- unset) or give them to tiers and rules in LIMITS_FILE`,
        );
      }
      identity = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return EMPTY;
      throw error;
    }
    if (this.cached?.identity === identity) return this.cached.contents;
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return EMPTY;
      throw error;
    }
    const contents = this.parse(text);
    this.cached = { identity, contents };
    return contents;
  }

  private parse(text: string): FileContents {
    const read = parseStrictJson(text, { maxDepth: 8, maxBytes: MAX_OVERRIDES_FILE_BYTES, plainNumbers: true });
    if (!read.ok) {
      throw new CorruptOverrideError(
        `${this.path} is not valid JSON: ${read.problem}; fix it there, or move the file away to start with no overrides (npm run limits -- set writes a new one)`,
      );
    }
    const list = (read.value as { overrides?: unknown } | null)?.overrides;
    if (!Array.isArray(list)) {
      throw new CorruptOverrideError(`${this.path}: expected { "version": 1, "overrides": [...] }; fix it, or move the file away to start with no overrides`);
    }
    const records: LimitOverrideRecord[] = [];
    const skipped: SkippedOverride[] = [];
    const unreadable: unknown[] = [];
    list.forEach((value: unknown, i) => {
      const where = `${this.path} overrides[${i}]`;
      try {
        records.push(parseOverrideRecord(value, where));
      } catch (error) {
        if (!(error instanceof CorruptOverrideError)) throw error;
        skipped.push(skippedOf(error, where));
        unreadable.push(value);
      }
    });
    return { records, skipped, unreadable };
  }

  private mutate<T>(nowMs: number, id: string, change: (live: readonly LimitOverrideRecord[], unreadableRemoved: boolean) => { records: readonly LimitOverrideRecord[]; result: T }): Promise<T> {
    return this.writes.run(async () => {
      const contents = await this.readAll();
      // A record nobody can read that has this target's id is replaced (set) or removed (unset) with it.
      const unreadable = contents.unreadable.filter((value) => (value as { id?: unknown } | null)?.id !== id);
      const { records, result } = change(live(contents.records, nowMs), unreadable.length !== contents.unreadable.length);
      const file = { version: 1, overrides: [...records, ...unreadable] };
      // A file the instances would refuse to read is never written: they would keep their last view, and a new one would not start.
      const bytes = Buffer.byteLength(`${JSON.stringify(file, null, 2)}\n`);
      if (bytes > MAX_OVERRIDES_FILE_BYTES) {
        throw new CorruptOverrideError(
          `${this.path} would be ${bytes} bytes, more than the ${MAX_OVERRIDES_FILE_BYTES} bytes the service reads (about 15,000 overrides); nothing was written: remove overrides (npm run limits -- unset) or give them to tiers and rules in LIMITS_FILE`,
        );
      }
      await writeJsonFileAtomically(this.path, file);
      return result;
    });
  }
}

function live(records: readonly LimitOverrideRecord[], nowMs: number): LimitOverrideRecord[] {
  return records.filter((r) => r.expiresAtMs === null || r.expiresAtMs > nowMs);
}
