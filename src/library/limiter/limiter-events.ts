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
  outageStarted(backend: BackendName): void;
  outageEnded(backend: BackendName): void;
}
