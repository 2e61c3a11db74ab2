import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger, type Logger } from '../shared/logger';
import type { TokenRecord, TokenStore } from './token-record';
import { CorruptTokenRecordError, parseTokenRecord } from './token-record-schema';
import { EMPTY_TOKEN_FILE_INDEX, parseTokenFile, type TokenFileIndex } from './token-file-index';
import { checkLockTimings, DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_STALE_LOCK_MS, isErrno } from './token-file-lock';
import { writeJsonFileAtomically } from './atomic-json-file';
import { LockedWriteQueue } from './locked-write-queue';

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
  /** Where an unreadable file is reported, once per problem (not per lookup). Default: silent. */
  readonly logger?: Logger;
}

export const TOKEN_FILE_MISSING = 'ERR_FIRELIMIT_TOKEN_FILE_MISSING';

/**
 * The file was read before and is gone. A store failure, not an empty store:
 * answering "no such token" would turn every valid token into a failed
 * sign-in, counted against its client, for what is an operator's mistake.
 */
export class TokenFileMissingError extends Error {
  readonly code = TOKEN_FILE_MISSING;
  override readonly name = 'TokenFileMissingError';
  constructor(readonly path: string) {
    super(`${path} existed and is gone; restore it, or create tokens again with \`npm run token -- create\``);
  }
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
  private readonly logger: Logger;
  /** The last parse of one file version, or why that version could not be used (so it is not re-parsed per lookup). */
  private cached: { version: FileVersion; index: TokenFileIndex } | { version: FileVersion; error: Error } | undefined;
  /** The file existed at some point in this store's life; from then on its absence is a failure. */
  private seenFile = false;
  /** What was last logged as wrong with the file, so each problem is logged once. */
  private reportedProblem: string | undefined;
  private readonly writes: LockedWriteQueue;

  constructor(options: FileTokenStoreOptions) {
    this.path = path.resolve(options.path);
    const timeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    const staleMs = options.staleLockMs ?? DEFAULT_STALE_LOCK_MS;
    checkLockTimings(timeoutMs, staleMs);
    this.writes = new LockedWriteQueue(this.path, { timeoutMs, staleMs });
    this.logger = options.logger ?? silentLogger;
  }

  async create(record: TokenRecord): Promise<void> {
    const checked = parseTokenRecord(record, 'create');
    await this.mutate((current) => {
      if (current.byId.has(checked.id)) throw new Error(`a token with id ${checked.id} already exists`);
      if (current.byHash.has(checked.secretHash)) throw new Error('a token with this secret already exists');
      return { records: [...current.records, checked], result: undefined };
    });
  }

  async findByHash(secretHash: string): Promise<TokenRecord | undefined> {
    // A Map lookup, not a scan with constant-time compares. The key is the SHA-256 of a secret the caller
    // chose: string hashing and any bucket comparison can at most hint that a stored hash shares a prefix
    // with the caller's hash, and turning that into a match needs a SHA-256 preimage. The verifier still
    // confirms a hit with a constant-time compare.
    return (await this.read()).byHash.get(secretHash);
  }

  async get(id: string): Promise<TokenRecord | undefined> {
    return (await this.read()).byId.get(id);
  }

  async list(): Promise<TokenRecord[]> {
    return [...(await this.read()).records];
  }

  async revoke(id: string, nowMs: number): Promise<boolean> {
    return this.mutate(({ records }) => {
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
    return this.mutate(({ records }) => {
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
    await this.writes.drained();
    this.cached = undefined;
  }

  /**
   * The current records, re-parsed only when the file changed since the last read.
   * No file is an empty store only until the file has been seen: a first start
   * has no tokens yet, but a file that vanished took its tokens with it.
   */
  private async read(): Promise<TokenFileIndex> {
    let version: FileVersion;
    try {
      const s = await stat(this.path, { bigint: true });
      version = `${s.ino}:${s.size}:${s.mtimeNs}`;
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return this.absent();
      throw error;
    }
    this.seenFile = true;
    if (this.cached?.version === version) {
      if ('error' in this.cached) throw this.cached.error;
      return this.cached.index;
    }
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      // Writers rename over the file, so it never goes missing between stat and read unless deleted.
      if (isErrno(error, 'ENOENT')) return this.absent();
      throw error;
    }
    let index: TokenFileIndex;
    try {
      index = parseTokenFile(text, this.path);
    } catch (error) {
      if (!(error instanceof CorruptTokenRecordError)) throw error;
      this.cached = { version, error };
      this.report(`corrupt:${version}`, 'token file is corrupt; sign-ins answer 503 until it is fixed', error);
      throw error;
    }
    this.cached = { version, index };
    this.recovered();
    return index;
  }

  private absent(): TokenFileIndex {
    this.cached = undefined;
    if (!this.seenFile) return EMPTY_TOKEN_FILE_INDEX;
    const error = new TokenFileMissingError(this.path);
    this.report('missing', 'token file is gone; sign-ins answer 503 until it is restored', error);
    throw error;
  }

  /** Path, code and reason; each a description of the file, never of its contents, so no hash is logged. */
  private report(problem: string, message: string, error: CorruptTokenRecordError | TokenFileMissingError): void {
    if (this.reportedProblem === problem) return;
    this.reportedProblem = problem;
    const detail = error instanceof CorruptTokenRecordError ? { where: error.where, reason: error.reason } : { reason: 'deleted or renamed away after it was read' };
    this.logger.error(message, { event: 'tokens.file_unreadable', path: this.path, code: error.code, ...detail });
  }

  private recovered(): void {
    if (this.reportedProblem === undefined) return;
    this.reportedProblem = undefined;
    this.logger.info('token file is readable again', { event: 'tokens.file_readable', path: this.path });
  }

  /** Read-modify-write under the in-process queue and the cross-process lock. */
  private mutate<T>(change: (current: TokenFileIndex) => { records?: readonly TokenRecord[]; result: T }): Promise<T> {
    return this.writes.run(async () => {
      this.cached = undefined; // another process may have written within our mtime granularity
      const { records, result } = change(await this.read());
      if (records !== undefined) await writeJsonFileAtomically(this.path, { version: 1, tokens: records } satisfies FileContent);
      return result;
    });
  }
}
