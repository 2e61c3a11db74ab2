import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { CorruptOverrideError, parseOverrideRecord, type LimitOverrideRecord, type LimitOverrideStore } from './limit-override-record';
import { isErrno } from './token-file-lock';
import { writeJsonFileAtomically } from './atomic-json-file';
import { LockedWriteQueue } from './locked-write-queue';

/**
 * Overrides in one JSON file, written the way the token file is (temporary
 * file renamed into place, a lock file between processes), so the CLI and
 * every running instance on the machine share it. Expired records are
 * dropped from reads at once and from the file on the next write.
 */
export class FileOverrideStore implements LimitOverrideStore {
  readonly path: string;
  private readonly writes: LockedWriteQueue;

  constructor(filePath: string) {
    this.path = path.resolve(filePath);
    this.writes = new LockedWriteQueue(this.path);
  }

  async list(nowMs: number): Promise<LimitOverrideRecord[]> {
    return (await this.readAll()).filter((r) => r.expiresAtMs === null || r.expiresAtMs > nowMs);
  }

  put(record: LimitOverrideRecord): Promise<void> {
    return this.mutate(record.setAtMs, (records) => ({ records: [...records.filter((r) => r.id !== record.id), record], result: undefined }));
  }

  remove(id: string, nowMs: number): Promise<boolean> {
    return this.mutate(nowMs, (records) => {
      const kept = records.filter((r) => r.id !== id);
      return { records: kept, result: kept.length !== records.length };
    });
  }

  async close(): Promise<void> {
    await this.writes.drained();
  }

  private async readAll(): Promise<LimitOverrideRecord[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return [];
      throw error;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new CorruptOverrideError(`${this.path}: not JSON`);
    }
    const list = (json as { overrides?: unknown }).overrides;
    if (!Array.isArray(list)) throw new CorruptOverrideError(`${this.path}: expected { "version": 1, "overrides": [...] }`);
    return list.map((value, i) => parseOverrideRecord(value, `${this.path} overrides[${i}]`));
  }

  private mutate<T>(nowMs: number, change: (live: readonly LimitOverrideRecord[]) => { records: readonly LimitOverrideRecord[]; result: T }): Promise<T> {
    return this.writes.run(async () => {
      const { records, result } = change(await this.list(nowMs));
      await writeJsonFileAtomically(this.path, { version: 1, overrides: records });
      return result;
    });
  }
}
