/**
 * One OS process with its own limiter over a SqliteWindowStore on a file the
 * test names, driven over IPC (forked-worker.ts): one of the several processes
 * of one host sharing a file. Run as a forked child; import startSqliteWorker
 * from the test.
 */
import path from 'node:path';
import { SqliteWindowStore } from '../../src/library/backends/sqlite/sqlite-store';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { PolicySet } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { forkWorker, type ForkedWorker } from './forked-worker';

export type SqliteWorkerRequest =
  | { readonly type: 'init'; readonly path: string; readonly policies: PolicySet; readonly nowMs: number; readonly timeoutMs: number }
  /** `count` consumes of `key`, one after another: each its own BEGIN IMMEDIATE, racing the other processes' for the lock. */
  | { readonly type: 'run'; readonly key: string; readonly count: number }
  | { readonly type: 'close' };

export interface SqliteWorkerDecision {
  readonly allowed: boolean;
  readonly shared: boolean;
  readonly reason: string;
}

export type SqliteWorkerReply =
  | { readonly type: 'ready' }
  | { readonly type: 'decisions'; readonly decisions: SqliteWorkerDecision[] }
  | { readonly type: 'closed' }
  | { readonly type: 'error'; readonly message: string };

export function startSqliteWorker(): ForkedWorker<SqliteWorkerRequest, SqliteWorkerReply> {
  return forkWorker<SqliteWorkerRequest, SqliteWorkerReply>(path.join(__dirname, 'sqlite-worker.ts'), {}, 'sqlite worker');
}

let limiter: RateLimiter | undefined;

async function handle(request: SqliteWorkerRequest): Promise<SqliteWorkerReply> {
  switch (request.type) {
    case 'init':
      limiter = await createRateLimiter({
        store: new SqliteWindowStore({ path: request.path, timeoutMs: request.timeoutMs, sweepIntervalMs: 0 }),
        policies: request.policies,
        timeoutMs: request.timeoutMs,
        // Fail-closed: a decision the file did not make is refused, never counted from a local window.
        failurePolicy: 'fail-closed',
        clock: () => request.nowMs,
      });
      return { type: 'ready' };
    case 'run': {
      if (limiter === undefined) throw new Error('sqlite worker: run before init');
      const decisions: SqliteWorkerDecision[] = [];
      for (let i = 0; i < request.count; i++) {
        const d = await limiter.consume(request.key);
        decisions.push({ allowed: d.allowed, shared: d.shared, reason: d.reason });
      }
      return { type: 'decisions', decisions };
    }
    case 'close':
      await limiter?.close();
      return { type: 'closed' };
  }
}

if (require.main === module) {
  process.on('message', (raw) => {
    handle(raw as SqliteWorkerRequest).then(
      (reply) => process.send?.(reply),
      (error: unknown) => process.send?.({ type: 'error', message: String(error) }),
    );
  });
  // The test going away (even killed) closes the IPC channel: never outlive it.
  process.on('disconnect', () => process.exit(0));
}
