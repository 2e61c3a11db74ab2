import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { describeError } from '../../shared/describe-error';
import { silentLogger, type Logger } from '../../shared/logger';
import { withDeadline } from './backend-guard';
import type { LimitStore } from './limit-store';

export interface FleetEstimateOptions {
  /** The shared store the heartbeats go to (its `heartbeat`/`leaveFleet`). */
  readonly store: Pick<LimitStore, 'heartbeat' | 'leaveFleet' | 'whenReady'>;
  /** This instance's id in the heartbeats; default host name, pid and 6 random bytes, so restarts and replicas never share one. */
  readonly instanceId?: string;
  /** How often this instance beats. Default 10000. */
  readonly intervalMs?: number;
  /** A beat older than this no longer counts an instance as live. Default 3 × intervalMs. */
  readonly ttlMs?: number;
  /** Longest a beat is waited for before it counts as failed (RTDB has no deadline of its own). Default 5000. */
  readonly timeoutMs?: number;
  readonly clock?: () => number;
  readonly logger?: Logger;
}

export const DEFAULT_FLEET_INTERVAL_MS = 10_000;
const DEFAULT_BEAT_TIMEOUT_MS = 5000;

/** RTDB forbids . $ # [ ] / in a key; a host name may hold dots. */
function defaultInstanceId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(6).toString('hex')}`.replace(/[.$#[\]/\s]/g, '_');
}

/**
 * How many instances share the backend right now (ADR 0067): each instance
 * beats into the shared store every `intervalMs` and reads back how many beat
 * within the TTL. The outage fallback divides a key's remaining budget by it
 * (outage-share.ts), so N instances counting alone admit about the limit, not
 * N × the limit.
 *
 * During an outage the beats fail and the last estimate stays: the fleet as
 * it was when the store was last reachable is the one that is now counting
 * alone. An instance that gets CPU only during requests (Cloud Run's
 * request-based billing) beats late; `current()`, asked on every fallback
 * decision, starts a beat when the last one is older than the interval, off
 * the caller's path. An idle instance drops out of the count, which is right:
 * it admits nothing.
 */
export class FleetEstimate {
  readonly instanceId: string;
  private readonly intervalMs: number;
  private readonly ttlMs: number;
  private readonly timeoutMs: number;
  private readonly clock: () => number;
  private readonly logger: Logger;
  private estimate = 1;
  private lastBeatAtMs = Number.NEGATIVE_INFINITY;
  private beating: Promise<void> | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private failing = false;
  private closed = false;

  constructor(private readonly options: FleetEstimateOptions) {
    this.instanceId = options.instanceId ?? defaultInstanceId();
    this.intervalMs = options.intervalMs ?? DEFAULT_FLEET_INTERVAL_MS;
    this.ttlMs = options.ttlMs ?? 3 * this.intervalMs;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_BEAT_TIMEOUT_MS;
    this.clock = options.clock ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    for (const [name, value] of Object.entries({ intervalMs: this.intervalMs, ttlMs: this.ttlMs, timeoutMs: this.timeoutMs })) {
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`fleet estimate ${name} must be a positive integer of ms, got ${value}`);
    }
    if (this.ttlMs <= this.intervalMs) throw new RangeError(`fleet estimate ttlMs (${this.ttlMs}) must be longer than intervalMs (${this.intervalMs}), or every instance drops out between its beats`);
  }

  /** Live instances as last counted, without starting a beat (metrics: a scrape must not make an idle instance look live). */
  get instances(): number {
    return this.estimate;
  }

  /** Live instances as last counted, this one included (1 until a beat has answered). Starts a beat when the last is older than the interval. */
  current(): number {
    if (!this.closed && this.beating === undefined && this.clock() - this.lastBeatAtMs >= this.intervalMs) void this.beatOnceAtATime();
    return this.estimate;
  }

  /**
   * Once the store is connected (at most the timeout), beats, then every
   * `intervalMs` on an unref'd timer. A beat sent while a client still
   * connects would wait out its deadline and count this instance alone.
   */
  async start(): Promise<void> {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setInterval(() => void this.beatOnceAtATime(), this.intervalMs);
    this.timer.unref();
    await this.options.store.whenReady?.(this.timeoutMs);
    if (!this.closed) await this.beatOnceAtATime();
  }

  /** One beat that starts now, after the one in flight if any (whose count may predate the caller's news). Never rejects. */
  async beat(): Promise<void> {
    await this.beating;
    return this.beatOnceAtATime();
  }

  /** The timer's and current()'s beat: the one in flight if any, else a new one. */
  private beatOnceAtATime(): Promise<void> {
    this.beating ??= this.beatOnce().finally(() => {
      this.beating = undefined;
    });
    return this.beating;
  }

  private async beatOnce(): Promise<void> {
    const { heartbeat } = this.options.store;
    // Closed (a beat asked for as it closed): a beat now would write this instance back after its leave.
    if (heartbeat === undefined || this.closed) return;
    const nowMs = this.clock();
    this.lastBeatAtMs = nowMs;
    const result = await withDeadline(() => heartbeat.call(this.options.store, this.instanceId, nowMs, this.ttlMs), this.timeoutMs);
    if (this.closed) return;
    if (result.ok && Number.isSafeInteger(result.value) && result.value >= 1) {
      if (result.value !== this.estimate) {
        this.logger.info('live instances on the shared store changed; an outage shares each limit among them', { event: 'ratelimit.fleet_changed', instances: result.value, previous: this.estimate });
      }
      this.estimate = result.value;
      this.failing = false;
      return;
    }
    // Logged once until a beat succeeds: during an outage every beat fails, and the outage is already logged.
    if (!this.failing) {
      this.failing = true;
      this.logger.warn('fleet heartbeat failed; keeping the last count of live instances', {
        event: 'ratelimit.fleet_heartbeat_failed',
        instances: this.estimate,
        cause: result.ok ? 'bad_reply' : result.cause,
        error: result.ok ? undefined : describeError(result.error),
      });
    }
  }

  /** Stops beating and removes this instance's beat (best effort, bounded), so the others count it out at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    // A beat still in flight would write this instance back after the leave.
    await this.beating;
    const { leaveFleet } = this.options.store;
    if (leaveFleet === undefined) return;
    await withDeadline(() => leaveFleet.call(this.options.store, this.instanceId), this.timeoutMs);
  }
}
