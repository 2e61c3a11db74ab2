/**
 * How long one request may wait for its shared stores in all (issue 19 item
 * 5, ADR 0047): the sign-in budget, the tier, free and tool limits, one after
 * the other or at once. Time counts only while at least one store call of the
 * request is in flight, so calls made together count once and the time spent
 * reading the body between them does not count. Each call is then bounded by
 * min(its guard's deadline, what is left); with nothing left it is not sent
 * and the limiter answers by the failure policy.
 */
export class WaitBudget {
  private spentMs = 0;
  private inFlight = 0;
  private sinceMs = 0;

  /** `totalMs`: RATE_LIMIT_TIMEOUT_MS in the service. `clock`: monotonic ms, default performance.now. */
  constructor(
    readonly totalMs: number,
    private readonly clock: () => number = () => performance.now(),
  ) {
    if (!Number.isFinite(totalMs) || totalMs <= 0) throw new RangeError(`WaitBudget: totalMs must be a positive number, got ${totalMs}`);
  }

  /** Milliseconds left to wait, whole, never below 0. */
  leftMs(): number {
    const running = this.inFlight > 0 ? this.clock() - this.sinceMs : 0;
    return Math.max(0, Math.floor(this.totalMs - this.spentMs - running));
  }

  /** Runs `call` as one of the request's store waits. */
  async around<T>(call: () => Promise<T>): Promise<T> {
    if (this.inFlight++ === 0) this.sinceMs = this.clock();
    try {
      return await call();
    } finally {
      if (--this.inFlight === 0) this.spentMs += this.clock() - this.sinceMs;
    }
  }
}
