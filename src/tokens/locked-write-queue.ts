import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { acquireTokenFileLock, type TokenFileLockOptions } from './token-file-lock';

/**
 * The writers of one shared JSON file, in turn: this process's writers wait
 * in a queue, and each then takes the lock file beside the file (O_EXCL,
 * token-file-lock.ts), which serialises processes. So two read-modify-writes,
 * from here or from the CLI, never lose each other's change. The file's
 * directory is created (mode 0700) before the first write.
 */
export class LockedWriteQueue {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly filePath: string,
    private readonly lockOptions: TokenFileLockOptions = {},
  ) {}

  /** Runs `write` after every write queued before it, under the lock; its failure reaches its caller only, never the next writer. */
  run<T>(write: () => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      await mkdir(path.dirname(this.filePath), { recursive: true, mode: 0o700 });
      const release = await acquireTokenFileLock(`${this.filePath}.lock`, this.lockOptions);
      try {
        return await write();
      } finally {
        await release();
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Settles once every write queued so far has, whatever their outcome. */
  async drained(): Promise<void> {
    await this.queue;
  }
}
