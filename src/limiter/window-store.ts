import type { FixedWindowState, WindowAdjustment } from './algorithms/fixed-window';
import type { WindowDecision } from './decision';
import type { RateLimitPolicy } from './policy';

export type BackendName = 'memory' | 'rtdb' | 'redis';

/**
 * A place where windows live. A store only makes the pure decision atomic for
 * one key; it never decides anything itself and never reads the clock.
 */
export interface WindowStore {
  readonly backend: BackendName;
  /** True when every instance sees the same counters (rtdb, redis); false for memory. */
  readonly shared: boolean;
  consume(key: string, nowMs: number, policy: RateLimitPolicy, cost: number): Promise<WindowDecision>;
  /**
   * Applies `adjustFixedWindow` atomically: a refund or a reconciliation of
   * locally granted calls. Resolves once stored; a passed window is a no-op.
   */
  adjust(key: string, nowMs: number, policy: RateLimitPolicy, adjustment: WindowAdjustment): Promise<void>;
  /**
   * What the store last heard of `key` without asking (a listener's cache),
   * including other instances' spending; absent where the store has no such
   * view. The limiter starts a local window from it during an outage.
   */
  lastSeen?(key: string): FixedWindowState | undefined;
  /**
   * Resolves true once the store can answer (its connection is up), false
   * after `timeoutMs`; never rejects. Absent: always ready (memory).
   */
  whenReady?(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}
