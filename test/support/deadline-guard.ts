import { withDeadline, type BackendGuard, type GuardedResult } from '../../src/library/limiter/backend-guard';
import type { BackendName } from '../../src/library/limiter/limit-store';
import { describeError } from '../../src/shared/describe-error';
import type { Logger } from '../../src/shared/logger';

export interface DeadlineGuardOptions {
  readonly backend: BackendName;
  /** Deadline for one call. Default 1500. */
  readonly timeoutMs: number;
  readonly logger: Logger;
}

/**
 * Deadline only, one log line per failed call: for tests that want every call
 * to reach the store. The service uses OutageGuard, the default in
 * createRateLimiter, which logs once per outage and stops waiting on a broken
 * backend.
 */
export class DeadlineGuard implements BackendGuard {
  constructor(private readonly options: DeadlineGuardOptions) {}

  async run<T>(call: () => Promise<T>): Promise<GuardedResult<T>> {
    const result = await withDeadline(call, this.options.timeoutMs);
    if (!result.ok) {
      this.options.logger.warn('rate limit backend call failed; answered from the local window', {
        event: 'ratelimit.backend_failure',
        backend: this.options.backend,
        cause: result.cause,
        error: describeError(result.error),
      });
    }
    return result;
  }
}


/** Every call reaches the store; a failure is reported, nothing more. The outage guard has tests of its own. */
export const passThroughGuard: BackendGuard = {
  async run<T>(call: () => Promise<T>): Promise<GuardedResult<T>> {
    try {
      return { ok: true, value: await call() };
    } catch (error) {
      return { ok: false, cause: 'error', error };
    }
  },
};
