import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { TokenRecord, TokenStore } from './token-record';
import { CorruptTokenRecordError, parseTokenRecord } from './token-record-schema';
import {
  acquireTokenFileLock,
  checkLockTimings,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_STALE_LOCK_MS,
  isErrno,
} from './token-file-lock';
import { hashesEqual } from './token-secret';

export { TokenFileLockError } from './token-file-lock';

export interface FileTokenStoreOptions {
  /** The JSON file; its directory is created (mode 0700) on first write. */
  readonly path: string;
  /** How long a writer waits for another process's lock before giving up. Default 5000. */
  readonly lockTimeoutMs?: number;
  /**
   * A lock older than this is broken even when its owner cannot be checked (another host).
   * A lock whose owner died on this host is broken at once. Must be below lockTimeoutMs. Default 3000.
   */
  readonly staleLockMs?: number;
}

interface FileContent {
  readonly version: 1;
  readonly tokens: readonly TokenRecord[];
}

/** What identifies one version of the file: every write renames a new inode into place. */
type FileVersion = string;

/**
 * Token records in one JSON file, for the embedded default (`npm start`) and
 * the CLI beside it.
 *
 * The CLI and a running server share the file, so: every write goes to a
 * temporary file that is renamed over the old one (a reader never sees half a
 * file), writers take a lock file (O_EXCL) so two read-modify-writes cannot
 * lose each other's token, and every read checks the file's inode, size and
 * mtime, re-parsing only when it changed — the server sees a token the CLI
 * created or revoked on its next lookup, at the cost of one stat().
 *
 * The file holds hashes, not secrets, but is still written 0600: a hash list
 * is enough to enumerate ids and tiers.
 */
export class FileTokenStore implements TokenStore {
  readonly path: string;
  private readonly lockTimeoutMs: number;
  private readonly staleLockMs: number;
  private cached: { version: FileVersion; records: readonly TokenRecord[] } | undefined;
  /** Serialises this process's writers; the lock file serialises processes. */
  private writeQueue: Promise<unknown> = Promise.resolve();

  constructor(options: FileTokenStoreOptions) {
    this.path = path.resolve(options.path);
    this.lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    this.staleLockMs = options.staleLockMs ?? DEFAULT_STALE_LOCK_MS;
    checkLockTimings(this.lockTimeoutMs, this.staleLockMs);
  }

  async create(record: TokenRecord): Promise<void> {
    const checked = parseTokenRecord(record, 'create');
    await this.mutate((records) => {
      if (records.some((r) => r.id === checked.id)) throw new Error(`a token with id ${checked.id} already exists`);
      if (records.some((r) => hashesEqual(r.secretHash, checked.secretHash))) throw new Error('a token with this secret already exists');
      return { records: [...records, checked], result: undefined };
    });
  }

  async findByHash(secretHash: string): Promise<TokenRecord | undefined> {
    // Every record is compared, in constant time each, so the time taken says nothing about which hash matched.
    let found: TokenRecord | undefined;
    for (const record of await this.read()) if (hashesEqual(record.secretHash, secretHash)) found = record;
    return found;
  }

  async get(id: string): Promise<TokenRecord | undefined> {
    return (await this.read()).find((r) => r.id === id);
  }

  async list(): Promise<TokenRecord[]> {
    return [...(await this.read())];
  }

  async revoke(id: string, nowMs: number): Promise<boolean> {
    return this.mutate((records) => {
      const index = records.findIndex((r) => r.id === id);
      const current = records[index];
      if (current === undefined) return { result: false };
      // Revoking twice keeps the first time: that is when the token stopped being valid.
      if (current.revokedAtMs !== null) return { result: true };
      const next = [...records];
      next[index] = { ...current, revokedAtMs: nowMs };
      return { records: next, result: true };
    });
  }

  async update(id: string, changes: { tier?: string; scopes?: readonly string[] }): Promise<boolean> {
    return this.mutate((records) => {
      const index = records.findIndex((r) => r.id === id);
      const current = records[index];
      if (current === undefined) return { result: false };
      const updated = parseTokenRecord(
        { ...current, ...(changes.tier !== undefined && { tier: changes.tier }), ...(changes.scopes !== undefined && { scopes: [...changes.scopes] }) },
        `update ${id}`,
      );
      const next = [...records];
      next[index] = updated;
      return { records: next, result: true };
    });
  }

  async close(): Promise<void> {
    await this.writeQueue.catch(() => undefined);
    this.cached = undefined;
  }

  /** The current records, re-parsed only when the file changed since the last read. */
  private async read(): Promise<readonly TokenRecord[]> {
    let version: FileVersion;
    try {
      const s = await stat(this.path, { bigint: true });
      version = `${s.ino}:${s.size}:${s.mtimeNs}`;
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return [];
      throw error;
    }
    if (this.cached?.version === version) return this.cached.records;
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      // Renamed away between stat and read: the next read sees the new file.
      if (isErrno(error, 'ENOENT')) return [];
      throw error;
    }
    const records = this.parse(text);
    this.cached = { version, records };
    return records;
  }

  private parse(text: string): readonly TokenRecord[] {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // Refuse rather than treat as empty: an empty store would reject every token, and the next write would erase them.
      throw new CorruptTokenRecordError(`${this.path} is not valid JSON; fix or remove it (tokens in it are lost if removed)`);
    }
    const tokens = (json as Partial<FileContent> | null)?.tokens;
    if (typeof json !== 'object' || json === null || !Array.isArray(tokens)) {
      throw new CorruptTokenRecordError(`${this.path} is not a firelimit token file (expected {"version":1,"tokens":[...]})`);
    }
    return tokens.map((t, i) => parseTokenRecord(t, `${this.path} tokens[${i}]`));
  }

  /** Read-modify-write under the in-process queue and the cross-process lock. */
  private mutate<T>(change: (records: readonly TokenRecord[]) => { records?: readonly TokenRecord[]; result: T }): Promise<T> {
    const run = this.writeQueue.then(async () => {
      await mkdir(path.dirname(this.path), { recursive: true, mode: 0o700 });
      const release = await this.lock();
      try {
        this.cached = undefined; // another process may have written within our mtime granularity
        const { records, result } = change(await this.read());
        if (records !== undefined) await this.writeAtomically({ version: 1, tokens: records });
        return result;
      } finally {
        await release();
      }
    });
    this.writeQueue = run.catch(() => undefined);
    return run;
  }

  private async writeAtomically(content: FileContent): Promise<void> {
    const temp = `${this.path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const handle = await open(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(content, null, 2)}\n`, 'utf8');
      await handle.sync(); // the rename must never publish a file whose data is not on disk
    } finally {
      await handle.close();
    }
    try {
      await rename(temp, this.path);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
    }
  }

  private lock(): Promise<() => Promise<void>> {
    return acquireTokenFileLock(`${this.path}.lock`, { timeoutMs: this.lockTimeoutMs, staleMs: this.staleLockMs });
  }
}
