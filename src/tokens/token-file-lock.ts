import { randomBytes } from 'node:crypto';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import os from 'node:os';

/** Stable code: another writer holds the token file's lock past the wait. */
export const TOKEN_FILE_LOCKED = 'ERR_FIRELIMIT_TOKEN_FILE_LOCKED';

export class TokenFileLockError extends Error {
  readonly code = TOKEN_FILE_LOCKED;
  override readonly name = 'TokenFileLockError';
}

/** Default wait for another writer's lock. */
export const DEFAULT_LOCK_TIMEOUT_MS = 5000;
/**
 * Default age past which a lock is broken even when its owner cannot be
 * checked (another host, no owner recorded). Below the lock timeout, so a
 * waiting writer always outlives a stale lock instead of giving up on it.
 */
export const DEFAULT_STALE_LOCK_MS = 3000;

export interface TokenFileLockOptions {
  /** How long to wait for another writer. Default DEFAULT_LOCK_TIMEOUT_MS. */
  readonly timeoutMs?: number;
  /** Age that makes a lock stale whatever its owner. Must be below timeoutMs. Default DEFAULT_STALE_LOCK_MS. */
  readonly staleMs?: number;
  /** Default os.hostname(); a test stands in for another machine with it. */
  readonly hostname?: string;
}

/** What a lock file holds: who took it, so a waiter can tell a crashed writer from a slow one. */
interface LockOwner {
  readonly pid: number;
  readonly hostname: string;
  /** Tells this lock from a later one by the same process, even on a reused inode. */
  readonly nonce?: string;
}

const POLL_INTERVAL_MS = 20;

/** Checks the pair of durations once, at construction, so a bad pair fails before any write. */
export function checkLockTimings(timeoutMs: number, staleMs: number): void {
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new RangeError(`lockTimeoutMs must be a positive integer, got ${timeoutMs}`);
  if (!Number.isSafeInteger(staleMs) || staleMs < 1 || staleMs >= timeoutMs) {
    // Equal or longer, and a writer waiting on a dead writer's lock gives up before it may break it.
    throw new RangeError(`staleLockMs must be a positive integer below lockTimeoutMs (${timeoutMs}), got ${staleMs}`);
  }
}

/**
 * Takes `lockPath` with O_EXCL and returns its release. The file records the
 * owner's pid and hostname. A lock is stale, and broken, when
 *
 * - its owner was on this host and that pid is gone (`kill(pid, 0)` says
 *   ESRCH): a killed writer's lock is broken at once, not after a timeout;
 * - or, when the owner cannot be checked (another host, whose pids mean
 *   nothing here; an owner that died between creating and filling the file;
 *   an older lock format), it is older than `staleMs`.
 *
 * A lock whose owner is alive on this host is waited for, up to `timeoutMs`.
 */
export async function acquireTokenFileLock(lockPath: string, options: TokenFileLockOptions = {}): Promise<() => Promise<void>> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const staleMs = options.staleMs ?? DEFAULT_STALE_LOCK_MS;
  checkLockTimings(timeoutMs, staleMs);
  const hostname = options.hostname ?? os.hostname();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const content = JSON.stringify({ pid: process.pid, hostname, nonce: randomBytes(8).toString('hex') } satisfies LockOwner);
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      try {
        await handle.writeFile(content);
      } finally {
        await handle.close();
      }
      // Our lock only: if another host's writer broke it as stale, the file there now is theirs.
      return async () => {
        const current = await inspect(lockPath).catch(() => undefined);
        if (current?.text === content) await unlink(lockPath).catch(() => undefined);
      };
    } catch (error) {
      if (!isErrno(error, 'EEXIST')) throw error;
    }
    if (await breakIfStale(lockPath, hostname, staleMs)) continue;
    if (Date.now() > deadline) {
      throw new TokenFileLockError(`${lockPath} is held by a running writer (waited ${timeoutMs} ms); retry, or delete the lock if no token command is running`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

/** True when the lock was stale and is gone (or vanished on its own), so the caller may try again at once. */
async function breakIfStale(lockPath: string, hostname: string, staleMs: number): Promise<boolean> {
  const seen = await inspect(lockPath);
  if (seen === undefined) return true;
  const local = seen.owner !== undefined && seen.owner.hostname === hostname;
  // A live owner on this host is trusted however long it holds the lock: it may be slow, not dead.
  const stale = local ? !isProcessAlive((seen.owner as LockOwner).pid) : Date.now() - seen.mtimeMs > staleMs;
  if (!stale) return false;
  // Only the lock judged stale is removed: another waiter may have broken it and taken a fresh one
  // since. The check and the unlink are not one step, but the window is a stat long, not a poll long.
  const again = await inspect(lockPath);
  if (again !== undefined && again.ino === seen.ino && again.text === seen.text) await unlink(lockPath).catch(() => undefined);
  return true;
}

/** A lock as found; inode and text together tell one lock from the next (an inode is reused at once). */
async function inspect(lockPath: string): Promise<{ ino: bigint; text: string; mtimeMs: number; owner: LockOwner | undefined } | undefined> {
  try {
    const [s, text] = await Promise.all([stat(lockPath, { bigint: true }), readFile(lockPath, 'utf8')]);
    return { ino: s.ino, text, mtimeMs: Number(s.mtimeMs), owner: parseOwner(text) };
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/** Undefined for an empty file (its writer is between create and write, or died there) or an older format. */
function parseOwner(text: string): LockOwner | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockOwner> | null;
    if (typeof value?.pid === 'number' && Number.isSafeInteger(value.pid) && value.pid > 0 && typeof value.hostname === 'string') {
      return { pid: value.pid, hostname: value.hostname };
    }
  } catch {
    // Not ours to interpret: the age rule decides.
  }
  return undefined;
}

/** Signal 0 checks existence without signalling. EPERM: it exists, under another user. */
function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return !isErrno(error, 'ESRCH');
  }
}

export function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
