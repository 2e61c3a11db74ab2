import { overrideIdOf, type LimitOverride, type OverrideIndex } from '../policies/limit-override';
import { describeError } from '../shared/describe-error';
import type { Logger } from '../shared/logger';
import { CorruptOverrideError, toLimitOverride, type LimitOverrideRecord, type LimitOverrideStore, type OverrideListing } from './limit-override-record';

export interface OverrideWatcherOptions {
  readonly store: LimitOverrideStore;
  /** How often the store is read; every instance applies a change within this (plus one read). */
  readonly pollMs: number;
  readonly logger: Logger;
  readonly clock?: () => number;
}

/**
 * Keeps this instance's view of the runtime overrides, by a bounded poll of
 * the store (one small read every `pollMs`, the same on the file store and
 * Firestore, and no listener to lose on a reconnect). Each change is logged
 * once, with its target and figures: set, changed, removed, expired. A read
 * that fails keeps the last view (logged once until a read succeeds).
 * Unchanged records keep their policy objects, so the limiter's per-set
 * caches stay warm.
 *
 * Nothing a store holds can stop the instance: a record the service cannot
 * load is skipped (logged once, with where it is and why) and the others
 * apply. At startup there is no last view to keep, so `start()` does not
 * resolve, and the instance does not serve, until one read has succeeded:
 * it retries every `pollMs`, logging once (docs/adr/0048).
 */
export class OverrideWatcher {
  private index = new Map<string, LimitOverride>();
  private records = new Map<string, string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private failing = false;
  private closed = false;
  /** The skipped records of the last read, by where and why, so each is logged once while it stays. */
  private skipped = new Set<string>();
  private lastList: readonly LimitOverrideRecord[] = [];
  private polling: Promise<void> | undefined;
  private readonly clock: () => number;
  /** When the latest read started (this.clock), whatever it found. */
  private lastReadAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: OverrideWatcherOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /**
   * The overrides in force, as of the last read. Expired ones may linger until the next read; resolution skips them by time.
   * Asked on every request: one that finds the last read older than `pollMs` starts a read, without waiting for it.
   * With request-based billing Cloud Run gives an idle instance almost no CPU, so the poll timer can stall for minutes;
   * this way the first request after that starts the read, and the requests that follow it see the override.
   */
  readonly current = (): OverrideIndex => {
    if (this.timer !== undefined && this.polling === undefined && this.clock() - this.lastReadAtMs >= this.options.pollMs) void this.refresh();
    return this.index;
  };

  /**
   * Reads until one read succeeds (so the first request already sees the
   * overrides, and none is served without them), then polls. Resolves
   * early, with nothing read, only if the watcher is closed meanwhile.
   */
  async start(): Promise<void> {
    const { logger, pollMs } = this.options;
    for (let attempt = 1; ; attempt += 1) {
      let listing: OverrideListing;
      try {
        this.lastReadAtMs = this.clock();
        listing = await this.options.store.list(this.lastReadAtMs);
      } catch (error) {
        if (attempt === 1) {
          logger.error('limit overrides cannot be read at startup; not serving until they can be, retrying', {
            event: 'ratelimit.overrides_unreadable_at_start',
            retryEveryMs: pollMs,
            ...problemOf(error),
          });
        }
        await new Promise((resolve) => setTimeout(resolve, pollMs));
        if (this.closed) return;
        continue;
      }
      if (attempt > 1) logger.info('limit overrides read at startup', { event: 'ratelimit.overrides_readable', attempts: attempt });
      this.apply(listing, this.clock());
      break;
    }
    if (this.closed) return;
    this.timer = setInterval(() => void this.refresh(), pollMs);
    this.timer.unref();
  }

  /** One read now (or the one in progress). Never rejects: whatever goes wrong keeps the last view and is logged. */
  refresh(): Promise<void> {
    this.polling ??= this.read()
      .catch((error: unknown) => {
        this.options.logger.error('limit overrides could not be applied; keeping the last ones read', { event: 'ratelimit.overrides_unreadable', error: describeError(error) });
      })
      .finally(() => {
        this.polling = undefined;
      });
    return this.polling;
  }

  private async read(): Promise<void> {
    const { logger } = this.options;
    const nowMs = this.clock();
    this.lastReadAtMs = nowMs;
    let listing: OverrideListing;
    try {
      listing = await this.options.store.list(nowMs);
    } catch (error) {
      if (!this.failing) logger.error('limit overrides cannot be read; keeping the last ones read', { event: 'ratelimit.overrides_unreadable', ...problemOf(error) });
      this.failing = true;
      return;
    }
    if (this.failing) logger.info('limit overrides are readable again', { event: 'ratelimit.overrides_readable' });
    this.failing = false;
    this.apply(listing, nowMs);
  }

  private apply({ records: list, skipped }: OverrideListing, nowMs: number): void {
    const { logger } = this.options;
    const skippedNow = new Set<string>();
    for (const { where, problem } of skipped) {
      const key = `${where}\n${problem}`;
      skippedNow.add(key);
      if (!this.skipped.has(key)) {
        logger.error('limit override skipped: it cannot be loaded; the others apply', {
          event: 'ratelimit.override_skipped',
          where,
          problem,
          fix: 'set the override again (npm run limits -- set), remove it (npm run limits -- unset), or correct it where it is stored',
        });
      }
    }
    this.skipped = skippedNow;
    // The file store hands back the same record objects while its file is unchanged: nothing to compare, record by record.
    if (list.length === this.lastList.length && list.every((record, i) => record === this.lastList[i])) return;
    this.lastList = list;
    const next = new Map<string, LimitOverride>();
    const nextRecords = new Map<string, string>();
    for (const record of list) {
      const id = overrideIdOf(record.target);
      if (next.has(id)) continue; // two records of one target (a hand edit): the first, as every instance reads it
      const text = JSON.stringify(record);
      nextRecords.set(id, text);
      const previous = this.records.get(id);
      const kept = this.index.get(id);
      next.set(id, previous === text && kept !== undefined ? kept : toLimitOverride(record));
      if (previous !== text) logger.info(previous === undefined ? 'limit override applied' : 'limit override changed', { event: 'ratelimit.override_set', ...describeRecord(record) });
    }
    for (const [id, text] of this.records) {
      if (nextRecords.has(id)) continue;
      const gone = JSON.parse(text) as LimitOverrideRecord;
      const expired = gone.expiresAtMs !== null && gone.expiresAtMs <= nowMs;
      logger.info(expired ? 'limit override expired' : 'limit override removed', { event: expired ? 'ratelimit.override_expired' : 'ratelimit.override_removed', ...describeRecord(gone) });
    }
    this.index = next;
    this.records = nextRecords;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.polling;
    await this.options.store.close();
  }
}

/**
 * What to log of a failed read: a CorruptOverrideError's text names the file,
 * the place and the remedy, and holds no secret; any other error only its
 * class and code (a message may quote a URL with a password).
 */
function problemOf(error: unknown): Record<string, unknown> {
  return { error: describeError(error), ...(error instanceof CorruptOverrideError ? { problem: error.message } : {}) };
}

/** A record for the log: its target (a token's public id, never a secret) and figures. */
export function describeRecord(record: LimitOverrideRecord): Record<string, unknown> {
  return {
    override: record.id,
    ...record.target,
    algorithm: record.algorithm,
    limit: record.limit,
    windowMs: record.windowMs,
    ...(record.burst !== undefined ? { burst: record.burst } : {}),
    shadow: record.shadow,
    expiresAt: isoTime(record.expiresAtMs),
  };
}

/** A time for the log; one no Date can show (the store refuses them) is given as its number rather than thrown. */
function isoTime(ms: number | null): string | number | null {
  if (ms === null) return null;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? ms : date.toISOString();
}
