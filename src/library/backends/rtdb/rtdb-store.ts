import type { Database, DataSnapshot } from 'firebase-admin/database';
import type { Adjustment } from '../../window/algorithm';
import { adjustSet, assertValidAdjustments, decideSet, type SetDecision } from '../../window/decide-set';
import { assertValidKey } from '../../window/key';
import { assertValidCost, longestWindowMs, type PolicySet } from '../../window/policy';
import { assertValidPolicySetOnce } from '../../window/policy-choice';
import { silentLogger } from '../../../shared/logger';
import { isRtdbMaxRetry, retryOnContention, type ContentionRetryOptions } from '../../limiter/contention';
import type { LimitStore, StoreDecision } from '../../limiter/limit-store';
import { inFlightTransactions, type InFlightTransactions } from './rtdb-in-flight';
import { ListenerCache, type ListenedNode } from './rtdb-listener-cache';
import { readSetStates, setNode } from './rtdb-node';
import { RtdbSweeper, type SweepResult } from './rtdb-sweeper';
import { rtdbHeartbeat, rtdbLeaveFleet } from './rtdb-fleet-heartbeat';
import type { RtdbStoreTuning } from '../../store-options';

export interface RtdbWindowStoreOptions extends RtdbStoreTuning {
  readonly database: Database;
}

export interface RtdbStoreStats {
  /** Transactions started: one per consume that reached the database. */
  readonly transactionsStarted: number;
  /** Refusals or reads written back unchanged because the client's view could not be trusted. */
  readonly confirmingWrites: number;
  /** Keys listened to right now. */
  readonly listenedKeys: number;
  /** Expired keys this store's sweeper removed. */
  readonly keysSwept: number;
  /** Sweeps finished (timer or `sweepOnce()`). */
  readonly sweeps: number;
}

/**
 * Limit states in Realtime Database: one transaction per decision on
 * `${rootPath}/${key}`, whose value holds every policy of the set and `e`
 * (rtdb-node.ts documents both layouts: `{ [windowNumber]: count, e }` for the
 * default single fixed window, one compact string per policy otherwise).
 *
 * The pure decision runs inside the transaction's update function. When it
 * says "write", the new node goes to the server with the hash of the value it
 * was computed from, and the server rejects it if that value was stale, so an
 * allowed decision is always checked. When it says "nothing to write" (a
 * refusal, or a cost-0 read), firebase would end the transaction right there
 * on the client's local view, unchecked. We accept that only when the view is
 * known to track the server (its listener has delivered a value) and holds no
 * other transaction's pending write; a count within a window only grows, so a
 * refusal on such a view, even a slightly old one, is still true. Otherwise the
 * node is written back unchanged: the server's hash check then confirms the
 * view (or forces a re-run on fresh data) atomically with any pending writes
 * it depends on. A stale or optimistic view therefore never produces a
 * refusal the server has not seen.
 *
 * The decision returned is the one from the last run of the update function,
 * which is the run that committed (or, when aborted, the trusted one).
 *
 * Each node also carries `e`, the end of its window; an RtdbSweeper started
 * here (off the request path, on a timer) removes nodes whose `e` has passed,
 * so keys that are never used again do not stay forever
 * (docs/adr/0008-expiring-shared-keys.md). The request path never queries.
 */
export class RtdbWindowStore implements LimitStore {
  readonly backend = 'rtdb' as const;
  readonly shared = true;

  private readonly database: Database;
  private readonly rootPath: string;
  private readonly listeners: ListenerCache;
  private readonly inFlight: InFlightTransactions;
  private readonly sweeper: RtdbSweeper;
  private started = 0;
  private confirming = 0;
  private closed = false;
  private readonly contention: ContentionRetryOptions;

  constructor(options: RtdbWindowStoreOptions) {
    this.database = options.database;
    this.contention = options.contention ?? {};
    this.rootPath = normaliseRootPath(options.rootPath);
    this.listeners = new ListenerCache({
      maxKeys: options.maxListenedKeys ?? 1000,
      idleWindows: options.listenerIdleWindows ?? 2,
    });
    this.inFlight = inFlightTransactions(options.database);
    this.sweeper = new RtdbSweeper({
      ...options.sweep,
      database: options.database,
      rootPath: this.rootPath,
      intervalMs: options.sweepIntervalMs,
      clock: options.clock,
      logger: options.logger ?? silentLogger,
    });
    this.sweeper.start();
  }

  get stats(): RtdbStoreStats {
    const sweeps = this.sweeper.stats;
    return {
      transactionsStarted: this.started,
      confirmingWrites: this.confirming,
      listenedKeys: this.listeners.size,
      keysSwept: sweeps.swept,
      sweeps: sweeps.runs,
    };
  }

  /** Same as `stats.transactionsStarted`; counts database work for tests and metrics. */
  get transactionsStarted(): number {
    return this.started;
  }

  async consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    assertValidCost(cost);
    const { path, ref, tracksServer } = this.node(key, nowMs, policies);

    let last: SetDecision | undefined;
    let confirmed = false;
    const update = (current: unknown): unknown => {
      const result = decideSet(readSetStates(current, policies), nowMs, policies, cost);
      last = result;
      confirmed = false;
      if (result.changed) return setNode(result.states, policies);
      if (tracksServer() && this.inFlight.at(path) === 1) return undefined; // abort: no write
      confirmed = true;
      // Written back as read: the server's hash check confirms this view, or re-runs us on fresh data.
      return current;
    };

    this.started++;
    // applyLocally false: our pending writes raise no local events, and the
    // listener's first event can only come from the server.
    // A transaction that gave up wrote nothing, so running it again cannot count the call twice.
    await retryOnContention(() => this.inFlight.around(path, () => ref.transaction(update, undefined, false)), isRtdbMaxRetry, this.contention);
    if (confirmed) this.confirming++;
    if (last === undefined) throw new Error('RTDB transaction completed without running its update function');
    return last;
  }

  /**
   * One transaction running `adjustSet`. "Nothing to do" is trusted on the
   * local view only as a refusal is in consume: a refund (negative delta) is a
   * no-op on a view that lacks the units it gives back, and a cold view (no
   * listener, or not delivered yet) is empty. Aborting there dropped the
   * refund on the client, unsent (found by test/integration/store-contract-sets.test.ts:
   * a refund through a second client never reached the server).
   */
  async adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    assertValidAdjustments(policies, adjustments);
    const { path, ref, tracksServer } = this.node(key, nowMs, policies);
    const update = (current: unknown): unknown => {
      const next = adjustSet(readSetStates(current, policies), nowMs, policies, adjustments);
      if (next !== null) return setNode(next, policies);
      if (tracksServer() && this.inFlight.at(path) === 1) return undefined; // abort: no write
      // Written back as read: the server's hash check confirms this view, or re-runs us on fresh data.
      return current;
    };
    await retryOnContention(() => this.inFlight.around(path, () => ref.transaction(update, undefined, false)), isRtdbMaxRetry, this.contention);
  }

  /**
   * The checked path of `key` and its listened Reference. The limiter
   * validates too, but this store may be used directly: a bad key must never
   * reach a path.
   */
  private node(key: string, nowMs: number, policies: PolicySet): ListenedNode & { readonly path: string } {
    assertValidKey(key);
    assertValidPolicySetOnce(policies);
    if (!Number.isFinite(nowMs)) throw new RangeError(`nowMs must be finite, got ${nowMs}`);
    if (this.closed) throw new Error('RtdbWindowStore is closed');
    const path = `${this.rootPath}/${key}`;
    return { path, ...this.listeners.touch(path, () => this.database.ref(path), nowMs, longestWindowMs(policies)) };
  }

  /**
   * The states the listener last saw for `key`: what every instance had
   * spent, as of the last push. The limiter starts a local window from it
   * during an outage, so an outage does not forget what the others spent.
   */
  lastSeen(key: string, policies: PolicySet): readonly unknown[] | undefined {
    const value = this.listeners.lastValue(`${this.rootPath}/${key}`);
    return value === undefined ? undefined : readSetStates(value, policies);
  }

  /** True once the client's connection is up (`.info/connected`), false after `timeoutMs`. */
  whenReady(timeoutMs: number): Promise<boolean> {
    const connected = this.database.ref('.info/connected');
    return new Promise((resolve) => {
      const onValue = (snapshot: DataSnapshot): void => {
        if (snapshot.val() !== true) return;
        finish(true);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      function finish(ready: boolean): void {
        clearTimeout(timer);
        connected.off('value', onValue);
        resolve(ready);
      }
      connected.on('value', onValue);
    });
  }

  heartbeat(instanceId: string, nowMs: number, ttlMs: number): Promise<number> {
    return rtdbHeartbeat(this.database, this.rootPath, instanceId, nowMs, ttlMs);
  }

  leaveFleet(instanceId: string): Promise<void> {
    return rtdbLeaveFleet(this.database, this.rootPath, instanceId);
  }

  /** One sweep of this root now (tests, tools); the timer runs them on its own. Never rejects. */
  sweepOnce(): Promise<SweepResult> {
    return this.sweeper.sweepOnce();
  }

  /** Stops the sweeper and drops every listener so the process can exit. Transactions in flight are not waited for. */
  async close(): Promise<void> {
    this.closed = true;
    this.sweeper.stop();
    this.listeners.close();
  }
}

function normaliseRootPath(rootPath: string): string {
  const segments = rootPath.split('/').filter((segment) => segment.length > 0);
  if (segments.length === 0) throw new TypeError('RtdbWindowStore: rootPath must name at least one path segment');
  for (const segment of segments) assertValidKey(segment);
  return segments.join('/');
}
