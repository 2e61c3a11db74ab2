/** Past this, a key whose calls given up on never settled is judged by the shared store again anyway. */
export const MAX_LANDING_DEFER_MS = 30_000;

/**
 * Per key, the calls the limiter gave up on that may still land on the store
 * (consumes and write-backs). A store that restarted empty takes them in any
 * order with the key's next calls, and a write-back's floor merged over a
 * call that landed first would swallow it (ADR 0046); so the key is answered
 * from the local window, which counts them, until they have settled.
 */
export class LandingTracker {
  private readonly landing = new Map<string, { readonly calls: Set<Promise<unknown>>; readonly sinceMs: number }>();

  constructor(private readonly clock: () => number = () => performance.now()) {}

  get size(): number {
    return this.landing.size;
  }

  track(key: string, settling: Promise<unknown>): void {
    let entry = this.landing.get(key);
    if (entry === undefined) {
      entry = { calls: new Set(), sinceMs: this.clock() };
      this.landing.set(key, entry);
    }
    const own = entry;
    const tracked: Promise<unknown> = settling.finally(() => {
      own.calls.delete(tracked);
      if (own.calls.size === 0 && this.landing.get(key) === own) this.landing.delete(key);
    });
    own.calls.add(tracked);
  }

  /**
   * True while the key has calls in flight (for less than
   * MAX_LANDING_DEFER_MS): its next calls are answered locally, without
   * waiting, until they settle.
   */
  inFlight(key: string): boolean {
    const entry = this.landing.get(key);
    if (entry === undefined) return false;
    if (this.clock() - entry.sinceMs < MAX_LANDING_DEFER_MS) return true;
    this.landing.delete(key);
    return false;
  }
}
