import type { Database } from 'firebase-admin/database';
import { assertValidKey } from '../key';
import { holderIdOf, type UpstreamCaller } from '../upstream/upstream-holder';
import { assertValidUpstreamPolicy, type UpstreamPolicy } from '../upstream/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../upstream/upstream-quota-store';
import { scheduleUpstream, type UpstreamScheduleResult } from '../upstream/upstream-schedule';
import { formatUpstreamState, parseUpstreamState } from '../upstream/upstream-state';
import { inFlightTransactions, type InFlightTransactions } from './rtdb-in-flight';
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
  /** No-write answers written back unchanged because the client's view could not be trusted. */
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
 * A no-write answer (a rejection, a reservation asked for early) is taken on
 * the client's view only when a listener keeps that view current and no
 * other transaction of ours is pending on the node, as RtdbWindowStore does;
 * the cursor only moves forward, so a rejection for waiting too long on such
 * a view is still true. Otherwise the value is written back unchanged and the
 * server's hash check confirms it.
 *
 * Under contention firebase retries an update up to 25 times and then fails
 * with `maxretry`; bench/upstream-hot-key-bench.ts measures where that starts.
 * Nothing sweeps this root: there is one node per configured quota.
 */
export class RtdbUpstreamQuotaStore implements UpstreamQuotaStore {
  readonly backend = 'rtdb' as const;
  private readonly database: Database;
  private readonly rootPath: string;
  private readonly listeners = new ListenerCache({ maxKeys: 100, idleWindows: 2 });
  private readonly inFlight: InFlightTransactions;
  private started = 0;
  private runs = 0;
  private confirming = 0;
  private closed = false;

  constructor(options: RtdbUpstreamQuotaStoreOptions) {
    assertValidKey(options.rootPath);
    this.database = options.database;
    this.rootPath = options.rootPath;
    this.inFlight = inFlightTransactions(options.database);
  }

  get stats(): RtdbUpstreamStats {
    return { transactionsStarted: this.started, updateRuns: this.runs, confirmingWrites: this.confirming };
  }

  async schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy): Promise<UpstreamScheduled> {
    assertValidKey(key);
    assertValidUpstreamPolicy(policy);
    if (!Number.isSafeInteger(nowMs)) throw new RangeError(`nowMs must be an integer, got ${nowMs}`);
    if (this.closed) throw new Error('RtdbUpstreamQuotaStore is closed');
    const holder = holderIdOf(caller);
    const path = `${this.rootPath}/${key}`;
    const { ref, tracksServer } = this.listeners.touch(path, () => this.database.ref(path), nowMs, Math.max(policy.windowMs, policy.maxWaitMs + policy.graceMs));

    let last: (UpstreamScheduleResult & { readonly read: ReturnType<typeof parseUpstreamState> }) | undefined;
    let confirmed = false;
    const update = (current: unknown): unknown => {
      this.runs++;
      const read = parseUpstreamState(typeof current === 'string' ? current : null);
      const result = scheduleUpstream(read, nowMs, holder, policy);
      last = { ...result, read };
      confirmed = false;
      if (result.next !== null) return formatUpstreamState(result.next);
      if (tracksServer() && this.inFlight.at(path) === 1) return undefined; // abort: no write
      confirmed = true;
      // Written back as read: the server's hash check confirms this view, or re-runs us on fresh data.
      return current;
    };

    this.started++;
    await this.inFlight.around(path, () => ref.transaction(update, undefined, false));
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
