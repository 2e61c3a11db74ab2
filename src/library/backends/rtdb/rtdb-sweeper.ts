import type { Database } from 'firebase-admin/database';
import type { RtdbSweepTuning } from '../../store-options';
import { silentLogger, type Logger } from '../../../shared/logger';
import { describeError } from '../../../shared/describe-error';
import { inFlightTransactions, type InFlightTransactions } from './rtdb-in-flight';
import { EXPIRY_CHILD, expiryOf, newestWindow } from './rtdb-node';
import { SweepLease } from './rtdb-sweep-lease';

export type { RtdbSweepTuning };

export interface RtdbSweeperOptions extends RtdbSweepTuning {
  readonly database: Database;
  /** The root whose children are keys, e.g. 'authFailures'. Already validated by the store. */
  readonly rootPath: string;
  /** Mean time between runs on the timer. 0: no timer (`sweepOnce()` still works). Default 60000. */
  readonly intervalMs?: number;
  /** Injected time. Default Date.now. */
  readonly clock?: () => number;
  /** Injected randomness for the jitter. Default Math.random. */
  readonly random?: () => number;
  /** Default: silent. A failing run is logged once, and the recovery once. */
  readonly logger?: Logger;
  /**
   * Test seam: awaited after each batch's query, before its deletes, with the
   * keys the query returned. Lets a test revive a key in that gap.
   */
  readonly afterQuery?: (keys: readonly string[]) => Promise<void> | void;
}

/** What one run did. */
export interface SweepResult {
  /** Nodes this run removed (its delete committed on a dead node). */
  readonly swept: number;
  /** Nodes found live when re-checked (written again since the query): left alone. */
  readonly kept: number;
  /** Nodes without `e` that were given one (see `legacyTtlMs`). */
  readonly stamped: number;
  /** Queries issued. */
  readonly batches: number;
  /** True when the run stopped at `maxBatchesPerRun` with a full last batch: more may be due. */
  readonly backlog: boolean;
  /** Set when the run ended early on an error: its class and code only. */
  readonly error?: string;
}

export interface RtdbSweeperStats {
  /** Runs finished, timer or `sweepOnce()`. */
  readonly runs: number;
  /** Nodes removed over all runs. */
  readonly swept: number;
  readonly kept: number;
  readonly stamped: number;
  /** Runs that ended on an error. */
  readonly failedRuns: number;
  /** Timed runs skipped because another instance held the root's sweep lease. */
  readonly skippedRuns: number;
}

export const DEFAULT_SWEEP_INTERVAL_MS = 60_000;
export const DEFAULT_SWEEP_GRACE_MS = 60_000;
export const DEFAULT_SWEEP_BATCH_SIZE = 100;
export const DEFAULT_SWEEP_MAX_BATCHES = 10;
export const DEFAULT_SWEEP_JITTER = 0.2;
export const DEFAULT_SWEEP_BACKLOG_DELAY_MS = 1000;
export const DEFAULT_LEGACY_TTL_MS = 86_400_000;
/** A sweep lease holds this many mean intervals: its holder renews it at every run, jitter and a slow run included. */
export const SWEEP_LEASE_INTERVALS = 3;

/** What a sweep does with one node, decided on the value the transaction sees. */
export type SweepVerdict = 'absent' | 'remove' | 'keep' | 'stamp';

/**
 * Pure: the fate of a node at `cutoffMs` (now − grace). A node holding no
 * well-formed window counts nothing and goes whatever its `e`; a node with a
 * window goes once its `e` is at or before the cutoff, and one with no `e`
 * at all is stamped (it would otherwise sort first in every query forever).
 */
export function sweepVerdict(value: unknown, cutoffMs: number): SweepVerdict {
  if (value === null || value === undefined) return 'absent';
  if (newestWindow(value) === null) return 'remove';
  const expiresAtMs = expiryOf(value);
  if (expiresAtMs === null) return 'stamp';
  return expiresAtMs <= cutoffMs ? 'remove' : 'keep';
}

/**
 * Removes the keys under one root whose windows have passed, off the request
 * path: on an unref'd timer, a query for the nodes with the oldest `e`
 * (`orderByChild('e').endAt(now − grace).limitToFirst(batchSize)`, served by
 * the `.indexOn: ["e"]` in database.rules.json), then one transaction per
 * returned key that re-checks `e` on the value it runs on. A delete is sent
 * with the hash of that value, so the server refuses it if the node was
 * written since (a concurrent consume revived it) and the re-run keeps it;
 * nothing live is ever removed, and several instances sweeping one root at
 * once only repeat each other's work.
 *
 * A run asks at most `maxBatchesPerRun` queries and stops at the first error
 * (logged once per failing stretch, class and code only). Runs never overlap;
 * the next is scheduled when one ends.
 */
export class RtdbSweeper {
  private readonly database: Database;
  private readonly rootPath: string;
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private readonly batchSize: number;
  private readonly maxBatches: number;
  private readonly jitter: number;
  private readonly backlogDelayMs: number;
  private readonly legacyTtlMs: number;
  private readonly clock: () => number;
  private readonly random: () => number;
  private readonly logger: Logger;
  private readonly afterQuery: RtdbSweeperOptions['afterQuery'];
  private readonly inFlight: InFlightTransactions;
  private readonly lease: SweepLease | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepResult> | undefined;
  private stopped = false;
  private failing = false;
  private totals = { runs: 0, swept: 0, kept: 0, stamped: 0, failedRuns: 0, skippedRuns: 0 };

  constructor(options: RtdbSweeperOptions) {
    this.database = options.database;
    this.rootPath = options.rootPath;
    this.intervalMs = nonNegative('sweepIntervalMs', options.intervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
    this.graceMs = nonNegative('graceMs', options.graceMs ?? DEFAULT_SWEEP_GRACE_MS);
    this.batchSize = positiveInteger('batchSize', options.batchSize ?? DEFAULT_SWEEP_BATCH_SIZE);
    this.maxBatches = positiveInteger('maxBatchesPerRun', options.maxBatchesPerRun ?? DEFAULT_SWEEP_MAX_BATCHES);
    this.jitter = options.jitter ?? DEFAULT_SWEEP_JITTER;
    if (!(this.jitter >= 0 && this.jitter < 1)) throw new RangeError(`sweep jitter must be in [0, 1), got ${this.jitter}`);
    this.backlogDelayMs = nonNegative('backlogDelayMs', options.backlogDelayMs ?? DEFAULT_SWEEP_BACKLOG_DELAY_MS);
    this.legacyTtlMs = nonNegative('legacyTtlMs', options.legacyTtlMs ?? DEFAULT_LEGACY_TTL_MS);
    this.clock = options.clock ?? Date.now;
    this.random = options.random ?? Math.random;
    this.logger = options.logger ?? silentLogger;
    this.afterQuery = options.afterQuery;
    this.inFlight = inFlightTransactions(options.database);
    this.lease =
      this.intervalMs > 0 && options.singleSweeper !== false
        ? new SweepLease({ database: options.database, rootPath: options.rootPath, leaseMs: SWEEP_LEASE_INTERVALS * this.intervalMs, clock: this.clock })
        : undefined;
  }

  get stats(): RtdbSweeperStats {
    return { ...this.totals };
  }

  /** Starts the timer (no-op when `intervalMs` is 0). The first run comes one jittered interval from now, not at boot. */
  start(): void {
    if (this.intervalMs === 0 || this.stopped || this.timer !== undefined) return;
    this.schedule(this.jittered(this.intervalMs));
  }

  /** Stops the timer; a run in progress finishes its current batch and starts no other. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One run now (or the one already in progress). Never rejects: an error ends the run and is in `error`. */
  sweepOnce(): Promise<SweepResult> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.timedRun().then((result) => {
        if (this.stopped) return;
        this.schedule(result?.backlog === true ? this.backlogDelayMs : this.jittered(this.intervalMs));
      });
    }, delayMs);
    this.timer.unref();
  }

  /**
   * A timer's run: only by the holder of the root's sweep lease, so one
   * instance sweeps a database's root at a time. When the lease cannot be
   * read (the database is failing), the run goes ahead: two sweepers only
   * repeat each other's work, and the run reports the failure if it lasts.
   */
  async timedRun(): Promise<SweepResult | undefined> {
    if (this.lease !== undefined) {
      const mine = await this.lease.tryTake().catch(() => true);
      if (!mine) {
        this.totals = { ...this.totals, skippedRuns: this.totals.skippedRuns + 1 };
        return undefined;
      }
    }
    return this.sweepOnce();
  }

  private jittered(ms: number): number {
    return Math.max(0, Math.round(ms * (1 + this.jitter * (2 * this.random() - 1))));
  }

  private async run(): Promise<SweepResult> {
    const nowMs = this.clock();
    const cutoffMs = nowMs - this.graceMs;
    let swept = 0;
    let kept = 0;
    let stamped = 0;
    let batches = 0;
    let backlog = false;
    let error: string | undefined;
    try {
      while (batches < this.maxBatches && !this.stopped) {
        const keys = await this.dueKeys(cutoffMs);
        batches++;
        if (keys.length === 0) break;
        if (this.afterQuery !== undefined) await this.afterQuery(keys);
        const verdicts = await Promise.all(keys.map((key) => this.sweepKey(key, cutoffMs, nowMs)));
        for (const verdict of verdicts) {
          if (verdict === 'remove') swept++;
          else if (verdict === 'keep') kept++;
          else if (verdict === 'stamp') stamped++;
        }
        if (keys.length < this.batchSize) break;
        backlog = batches === this.maxBatches;
      }
    } catch (caught) {
      error = describeError(caught) ?? 'unknown';
      backlog = false;
    }
    this.totals = {
      runs: this.totals.runs + 1,
      swept: this.totals.swept + swept,
      kept: this.totals.kept + kept,
      stamped: this.totals.stamped + stamped,
      failedRuns: this.totals.failedRuns + (error === undefined ? 0 : 1),
      skippedRuns: this.totals.skippedRuns,
    };
    this.report(error);
    return { swept, kept, stamped, batches, backlog, ...(error === undefined ? {} : { error }) };
  }

  /**
   * The keys due at the cutoff, oldest `e` first. Without the index the real
   * server ignores the query and sends the whole root, and `get()` hands that
   * to us unfiltered; the filter and the cap here keep the result right (if
   * not cheap) either way.
   */
  private async dueKeys(cutoffMs: number): Promise<string[]> {
    const snapshot = await this.database
      .ref(this.rootPath)
      .orderByChild(EXPIRY_CHILD)
      .endAt(cutoffMs)
      .limitToFirst(this.batchSize)
      .get();
    const keys: string[] = [];
    snapshot.forEach((child) => {
      const expiresAtMs = expiryOf(child.val());
      if (child.key !== null && (expiresAtMs === null || expiresAtMs <= cutoffMs)) keys.push(child.key);
      return keys.length >= this.batchSize;
    });
    return keys;
  }

  /** One transaction: the verdict of the run that ended it (committed or aborted). */
  private async sweepKey(key: string, cutoffMs: number, nowMs: number): Promise<SweepVerdict> {
    const path = `${this.rootPath}/${key}`;
    const last: { verdict: SweepVerdict } = { verdict: 'absent' };
    const update = (current: unknown): unknown => {
      last.verdict = sweepVerdict(current, cutoffMs);
      switch (last.verdict) {
        // Our cache may just not hold the node: deleting "nothing" with the
        // hash of nothing makes the server send the real value if there is one.
        case 'absent':
        case 'remove':
          return null;
        case 'keep':
          return undefined;
        case 'stamp':
          return { ...(current as Record<string, unknown>), [EXPIRY_CHILD]: nowMs + this.legacyTtlMs };
      }
    };
    // applyLocally false, like the store's: a listener's first event must be the server's value (ADR 0002).
    const { committed } = await this.inFlight.around(path, () => this.database.ref(path).transaction(update, undefined, false));
    return committed || last.verdict === 'keep' ? last.verdict : 'absent';
  }

  private report(error: string | undefined): void {
    // A run cut short by close() (the app is being deleted under it) is shutdown, not an outage.
    if (this.stopped) return;
    if (error !== undefined && !this.failing) {
      this.failing = true;
      this.logger.warn('rate limit key sweep failed; expired keys stay until a sweep succeeds', {
        event: 'ratelimit.sweep_failed',
        backend: 'rtdb',
        root: this.rootPath,
        error,
      });
    } else if (error === undefined && this.failing) {
      this.failing = false;
      this.logger.info('rate limit key sweep works again', { event: 'ratelimit.sweep_recovered', backend: 'rtdb', root: this.rootPath });
    }
  }
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a non-negative number, got ${value}`);
  return value;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}
