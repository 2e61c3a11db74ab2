import type { Decision } from '../window/decision';
import type { BackendName } from './limit-store';

/**
 * What the limiter reports as it works: the port its metrics (and anything
 * else that wants to watch) implement, so the limiter imports no adapter.
 * Every method is called on the request path and must not block or throw.
 */
export interface LimiterEvents {
  /** Once per decision returned. */
  recordDecision(backend: BackendName, decision: Decision): void;
  /** Once per call that reached the shared backend, with its wall time. */
  observeBackendCall(backend: BackendName, durationSeconds: number): void;
  /** `shard`: the shard (an RTDB database) whose outage this is, when the store has several; else the whole store's. */
  outageStarted(backend: BackendName, shard?: string): void;
  outageEnded(backend: BackendName, shard?: string): void;
}
