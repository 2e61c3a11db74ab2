import type { Database } from 'firebase-admin/database';
import { assertValidKey } from '../../window/key';
import { holderIdOf, type UpstreamCaller } from '../../schedule/upstream-holder';
import { assertValidUpstreamPolicy, type UpstreamPolicy } from '../../schedule/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../../schedule/upstream-quota-store';
import { scheduleUpstream, type UpstreamScheduleResult } from '../../schedule/upstream-schedule';
import { formatUpstreamState, parseUpstreamState, type UpstreamState } from '../../schedule/upstream-state';
import { isRtdbMaxRetry, retryOnContention } from '../../limiter/contention';
import { ListenerCache } from './rtdb-listener-cache';

export interface RtdbUpstreamQuotaStoreOptions {
  readonly database: Database;
  /** Where quota keys live, e.g. 'upstreamQuota'. One segment, a valid key. */
  readonly rootPath: string;
}

export interface RtdbUpstreamStats {
  /** Transactions started: one per schedule that reached the database. */
  readonly transactionsStarted: number;
  /** Update-function runs, first runs included: runs − started = the retries contention caused. */
  readonly updateRuns: number;
  /** No-write answers written back unchanged for the server to confirm: every one that reached the database. */
  readonly confirmingWrites: number;
}

/**
 * The upstream quota in Realtime Database: one transaction per call on
 * `${rootPath}/${key}`, whose value is the state's compact string
 * (upstream-state.ts). scheduleUpstream runs inside the update function; a
 * grant goes to the server with the hash of the value it was computed from,
 * so two instances can never hand out the same slot: the loser re-runs on
 * the winner's state.
 *
 * A no-write answer (a rejection, a reservation asked for early) is always
 * written back unchanged, so the server's hash check confirms the view it was
 * decided on, or re-runs it on the server's value. Unlike RtdbWindowStore it
 * is never taken on the listened view alone: "current" there only means
 * current as of the last push, and another instance's committed write may
 * not have arrived yet. A window count only grows, so a stale refusal stays
 * true; here a no-write answer can be falsified by a write we have not seen:
 * the holder claimed its slot elsewhere (it was told "reserved" for a
 * reservation that is gone), a claim freed the queue (reservations_full), a
 * reservation made elsewhere is the caller's (max_wait for a clock behind).
 * Skipping the store for no-write answers is the cursor cache's job, with
 * its staleness bound (upstream-cursor-cache.ts, ADR 0033).
 *
 * Under contention firebase retries an update up to 25 times and then fails
 * with `maxretry`; bench/upstream-hot-key-bench.ts measures where that starts.
 * That is retried with backoff, then reported as contention, which answers
 * this call locally without opening the outage (src/library/limiter/contention.ts).
 * Nothing sweeps this root: there is one node per configured quota.
 */
export class RtdbUpstreamQuotaStore implements UpstreamQuotaStore {
  readonly backend = 'rtdb' as const;
  private readonly database: Database;
  private readonly rootPath: string;
  private readonly listeners = new ListenerCache({ maxKeys: 100, idleWindows: 2 });
  private started = 0;
  private runs = 0;
  private confirming = 0;
  private closed = false;

  constructor(options: RtdbUpstreamQuotaStoreOptions) {
    assertValidKey(options.rootPath);
    this.database = options.database;
    this.rootPath = options.rootPath;
  }

  get stats(): RtdbUpstreamStats {
    return { transactionsStarted: this.started, updateRuns: this.runs, confirmingWrites: this.confirming };
  }

  async schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, restore: UpstreamState | null = null): Promise<UpstreamScheduled> {
    assertValidKey(key);
    assertValidUpstreamPolicy(policy);
    if (!Number.isSafeInteger(nowMs)) throw new RangeError(`nowMs must be an integer, got ${nowMs}`);
    if (this.closed) throw new Error('RtdbUpstreamQuotaStore is closed');
    const holder = holderIdOf(caller);
    const path = `${this.rootPath}/${key}`;
    // The listener is kept for speed only: a first run on a current view commits in one round trip.
    const { ref } = this.listeners.touch(path, () => this.database.ref(path), nowMs, Math.max(policy.windowMs, policy.maxWaitMs + policy.graceMs));

    let last: (UpstreamScheduleResult & { readonly read: ReturnType<typeof parseUpstreamState> }) | undefined;
    let confirmed = false;
    const update = (current: unknown): unknown => {
      this.runs++;
      // A missing (or unreadable) node starts from what this instance last saw: the database restarted empty.
      const read = parseUpstreamState(typeof current === 'string' ? current : null) ?? restore;
      const result = scheduleUpstream(read, nowMs, holder, policy, caller.claimSlotAtMs ?? null);
      last = { ...result, read };
      confirmed = false;
      if (result.next !== null) return formatUpstreamState(result.next);
      confirmed = true;
      // Written back as read: the server's hash check confirms this view, or re-runs us on fresh data.
      return current;
    };

    this.started++;
    // A transaction that gave up wrote nothing: running it again cannot take two slots.
    await retryOnContention(() => ref.transaction(update, undefined, false), isRtdbMaxRetry);
    if (confirmed) this.confirming++;
    if (last === undefined) throw new Error('RTDB transaction completed without running its update function');
    return { outcome: last.outcome, state: last.next ?? last.read };
  }

  /** Drops every listener so the process can exit. Transactions in flight are not waited for. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.close();
  }
}
