import { describeError } from '../../../shared/describe-error';
import type { Logger } from '../../../shared/logger';
import type { SqliteConnection } from './sqlite-connection';

export interface SqliteSweeperOptions {
  readonly connection: SqliteConnection;
  readonly namespace: string;
  /** A row is removed this long after its state expired: a clock that steps back still finds its count. */
  readonly graceMs: number;
  /** Rows per DELETE: each batch holds the write lock briefly, so decisions of other processes slip in between. Default 500. */
  readonly batchSize?: number;
}

const DEFAULT_BATCH_SIZE = 500;
const DELETE_EXPIRED = `DELETE FROM firelimit_limits WHERE (namespace, key, slot) IN (
  SELECT namespace, key, slot FROM firelimit_limits WHERE namespace = ? AND expires_at_ms < ? LIMIT ?)`;

/**
 * Removes rows whose states expired (the Redis TTL's and the RTDB sweeper's
 * job): a key used once must not stay in the file for good. A row read after
 * its expiry but before the sweep is harmless: the algorithm reads an expired
 * state as empty. Each process sweeps; deleting a deleted row is a no-op.
 */
export class SqliteSweeper {
  private timer: NodeJS.Timeout | undefined;
  private failing = false;
  private readonly batchSize: number;

  constructor(private readonly options: SqliteSweeperOptions) {
    this.batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  }

  /** Rows removed whose expiry, plus the grace, is before `nowMs`. Throws SqliteStoreError. */
  sweepOnce(nowMs: number): number {
    const cutoffMs = nowMs - this.options.graceMs;
    let removed = 0;
    for (;;) {
      const batch = this.options.connection.run(DELETE_EXPIRED, this.options.namespace, cutoffMs, this.batchSize);
      removed += batch;
      if (batch < this.batchSize) return removed;
    }
  }

  /** Sweeps every `intervalMs` by `clock` until stop(); a failing sweep is logged once, until one succeeds. */
  start(intervalMs: number, clock: () => number, logger: Logger): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => {
      if (!this.options.connection.isOpen) return;
      try {
        this.sweepOnce(clock());
        this.failing = false;
      } catch (error) {
        if (!this.failing) logger.warn('sqlite limit sweep failed; expired rows stay until a sweep succeeds', { event: 'ratelimit.sqlite_sweep_failed', error: describeError(error) });
        this.failing = true;
      }
    }, intervalMs);
    // The sweep is housekeeping: it must not keep a process alive that has nothing else to do.
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
