import { overrideIdOf, type LimitOverride, type OverrideIndex } from '../policies/limit-override';
import { describeError } from '../shared/describe-error';
import type { Logger } from '../shared/logger';
import { toLimitOverride, type LimitOverrideRecord, type LimitOverrideStore } from './limit-override-record';

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
 */
export class OverrideWatcher {
  private index = new Map<string, LimitOverride>();
  private records = new Map<string, string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private failing = false;
  private polling: Promise<void> | undefined;
  private readonly clock: () => number;

  constructor(private readonly options: OverrideWatcherOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /** The overrides in force, as of the last read. Expired ones may linger until the next read; resolution skips them by time. */
  readonly current = (): OverrideIndex => this.index;

  /** Reads once (so the first request already sees the overrides), then polls. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.pollMs);
    this.timer.unref();
  }

  refresh(): Promise<void> {
    this.polling ??= this.read().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  private async read(): Promise<void> {
    const { logger } = this.options;
    const nowMs = this.clock();
    let list: LimitOverrideRecord[];
    try {
      list = await this.options.store.list(nowMs);
    } catch (error) {
      if (!this.failing) logger.error('limit overrides cannot be read; keeping the last ones read', { event: 'ratelimit.overrides_unreadable', error: describeError(error) });
      this.failing = true;
      return;
    }
    if (this.failing) logger.info('limit overrides are readable again', { event: 'ratelimit.overrides_readable' });
    this.failing = false;
    const next = new Map<string, LimitOverride>();
    const nextRecords = new Map<string, string>();
    for (const record of list) {
      const id = overrideIdOf(record.target);
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
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.polling;
    await this.options.store.close();
  }
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
    expiresAt: record.expiresAtMs === null ? null : new Date(record.expiresAtMs).toISOString(),
  };
}
