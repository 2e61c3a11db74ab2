import { performance } from 'node:perf_hooks';
import type { Logger } from '../../shared/logger';
import type { LimiterEvents } from './limiter-events';
import { describeError } from '../../shared/describe-error';
import { withDeadline, type BackendGuard, type BackendFailureCause, type GuardedResult } from './backend-guard';
import type { BackendName } from './limit-store';
import type { WaitBudget } from './wait-budget';

export interface OutageGuardOptions {
  readonly backend: BackendName;
  /** Which limiter this guards, for the log lines (one service runs several on one backend). */
  readonly limiter?: string;
  /**
   * Which shard of the store this guards (an RTDB database's URL), when each
   * shard has a guard of its own (ShardedGuard): named in the log lines and
   * the metrics. Never a secret.
   */
  readonly shard?: string;
  /** Deadline for one backend call; a call past it is a failure. Default 1500 (set by createRateLimiter). */
  readonly timeoutMs: number;
  /** At most one call reaches the backend per this interval during an outage. Default 5000 (set by createRateLimiter). */
  readonly probeIntervalMs: number;
  readonly logger: Logger;
  /** Injected time for outage bookkeeping (probe schedule, durations in logs); default a monotonic clock. */
  readonly clock?: () => number;
  /** Backend call latency and outage figures; default none. */
  readonly metrics?: Pick<LimiterEvents, 'observeBackendCall' | 'outageStarted' | 'outageEnded'>;
}

export interface OutageState {
  readonly open: boolean;
  /** When the current outage started (guard clock), undefined when closed. */
  readonly sinceMs: number | undefined;
}

/** Retry-After never tells a client to come back sooner than this. */
export const MIN_OUTAGE_RETRY_AFTER_MS = 1000;

/**
 * Outage handling for a shared backend: bounds each call by a deadline, and
 * once a call fails (error or past the deadline) stops sending traffic to the
 * backend. While the outage lasts, calls fail at once (the limiter answers
 * them by its failure policy) except one probe per `probeIntervalMs`, which
 * goes to the backend with the deadline; the first successful probe ends the
 * outage. So an outage costs one slow call per probe interval instead of one
 * per request, and two log lines in all instead of one per request.
 *
 * Single-threaded bookkeeping keeps the concurrency rules simple: the outage
 * opens synchronously on the first failure to come back, so many calls that
 * fail together produce one line; a probe is claimed synchronously before it
 * is sent, so others never wait on it. Failures of calls sent before the most
 * recent recovery are stale and never reopen an outage.
 */
export class OutageGuard implements BackendGuard {
  private readonly options: OutageGuardOptions;
  private readonly clock: () => number;
  private sinceMs: number | undefined;
  private nextProbeAtMs = 0;
  private probeInFlight = false;
  /** Bumped on every recovery, so a call sent before it cannot reopen the outage with an old failure. */
  private generation = 0;
  private failedProbes = 0;
  private outages = 0;

  constructor(options: OutageGuardOptions) {
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) {
      throw new RangeError(`OutageGuard: timeoutMs must be a positive number, got ${options.timeoutMs}`);
    }
    if (!Number.isFinite(options.probeIntervalMs) || options.probeIntervalMs <= 0) {
      throw new RangeError(`OutageGuard: probeIntervalMs must be a positive number, got ${options.probeIntervalMs}`);
    }
    this.options = options;
    this.clock = options.clock ?? monotonicNowMs;
    options.metrics?.outageEnded(options.backend, options.shard);
  }

  get state(): OutageState {
    return { open: this.sinceMs !== undefined, sinceMs: this.sinceMs };
  }

  /** `state.open` without the object: asked on every call by ShardedGuard. */
  get isOpen(): boolean {
    return this.sinceMs !== undefined;
  }

  /** Outages opened since this guard was made. */
  get outageCount(): number {
    return this.outages;
  }

  /** Ends an open outage now, as a successful probe would: the backend was seen answering by another way (ShardedGuard). */
  recover(): void {
    if (this.sinceMs !== undefined) this.close(this.clock());
  }

  run<T>(call: () => Promise<T>, budget?: WaitBudget): Promise<GuardedResult<T>> {
    const timeoutMs = budget === undefined ? this.options.timeoutMs : Math.min(this.options.timeoutMs, budget.leftMs());
    // The request has waited its whole budget on other calls: this one is not sent, and says nothing about the backend.
    if (timeoutMs <= 0) return Promise.resolve({ ok: false, cause: 'timeout' });
    const timedCall = budget === undefined ? call : () => budget.around(call);
    if (this.sinceMs === undefined) return this.attempt(timedCall, this.generation, timeoutMs);
    const nowMs = this.clock();
    if (this.probeInFlight || nowMs < this.nextProbeAtMs) {
      // Not a promise chain of its own: the refusal must cost next to nothing.
      return Promise.resolve({ ok: false, cause: 'outage', retryAfterMs: this.retryAfterMs(nowMs) });
    }
    return this.probe(timedCall, nowMs, timeoutMs);
  }

  private async attempt<T>(call: () => Promise<T>, generation: number, timeoutMs: number): Promise<GuardedResult<T>> {
    const result = await this.timed(call, timeoutMs);
    if (result.ok) return result;
    const nowMs = this.clock();
    // A call cut short by its request's budget that ran out proves nothing: only a full deadline opens an outage.
    // Contention proves the backend up: only that key is answered locally (src/library/limiter/contention.ts).
    const proves = result.cause === 'contention' ? false : result.cause !== 'timeout' || timeoutMs >= this.options.timeoutMs;
    if (proves && this.sinceMs === undefined && generation === this.generation) this.open(result.cause, result.error, nowMs);
    return this.failure(result, nowMs);
  }

  private async probe<T>(call: () => Promise<T>, startMs: number, timeoutMs: number): Promise<GuardedResult<T>> {
    this.probeInFlight = true;
    // Counted from the probe's start, so a probe that hangs to the deadline still leaves one call per interval.
    this.nextProbeAtMs = startMs + this.options.probeIntervalMs;
    let result: GuardedResult<T>;
    try {
      result = await this.timed(call, timeoutMs);
    } finally {
      this.probeInFlight = false;
    }
    const nowMs = this.clock();
    if (result.ok) {
      this.close(nowMs);
      return result;
    }
    // The backend answered (busy with this key), so the outage is over for every other key.
    if (result.cause === 'contention') {
      this.close(nowMs);
      return this.failure(result, nowMs);
    }
    this.failedProbes++;
    return this.failure(result, nowMs);
  }

  private async timed<T>(call: () => Promise<T>, timeoutMs: number): Promise<GuardedResult<T>> {
    const startedAt = performance.now();
    const result = await withDeadline(call, timeoutMs);
    this.options.metrics?.observeBackendCall(this.options.backend, (performance.now() - startedAt) / 1000);
    return result;
  }

  private open(cause: BackendFailureCause, error: unknown, nowMs: number): void {
    this.sinceMs = nowMs;
    this.nextProbeAtMs = nowMs + this.options.probeIntervalMs;
    this.failedProbes = 0;
    this.outages++;
    this.options.metrics?.outageStarted(this.options.backend, this.options.shard);
    // Class and code only: an error message may carry a connection URL with its password.
    this.options.logger.warn('rate limit backend outage started; answering by the failure policy and probing the backend', {
      event: 'ratelimit.outage_started',
      backend: this.options.backend,
      limiter: this.options.limiter,
      ...(this.options.shard !== undefined && { shard: this.options.shard }),
      cause,
      error: describeError(error),
      timeoutMs: this.options.timeoutMs,
      probeIntervalMs: this.options.probeIntervalMs,
    });
  }

  private close(nowMs: number): void {
    const sinceMs = this.sinceMs ?? nowMs;
    this.sinceMs = undefined;
    this.generation++;
    this.options.metrics?.outageEnded(this.options.backend, this.options.shard);
    this.options.logger.info('rate limit backend outage ended; shared decisions resumed', {
      event: 'ratelimit.outage_ended',
      backend: this.options.backend,
      limiter: this.options.limiter,
      ...(this.options.shard !== undefined && { shard: this.options.shard }),
      durationMs: Math.max(0, nowMs - sinceMs),
      failedProbes: this.failedProbes,
    });
  }

  private failure<T>(result: Extract<GuardedResult<T>, { ok: false }>, nowMs: number): GuardedResult<T> {
    return { ...result, retryAfterMs: this.retryAfterMs(nowMs) };
  }

  /** Until the next probe may run; while the outage is closed again (a stale failure), the floor. */
  private retryAfterMs(nowMs: number): number {
    const untilProbeMs = this.sinceMs === undefined ? 0 : this.nextProbeAtMs - nowMs;
    return Math.max(MIN_OUTAGE_RETRY_AFTER_MS, Math.ceil(untilProbeMs));
  }
}

/**
 * Probing is about real elapsed time, not about windows: a monotonic clock, so
 * a wall clock stepped backwards (or a decision clock pinned by a test) can
 * neither stall probing nor end an outage early.
 */
function monotonicNowMs(): number {
  // Whole milliseconds: with fractions, (t + interval) - t can come out a hair
  // over the interval and a 1 s Retry-After would round up to 2 s.
  return Math.floor(performance.now());
}
