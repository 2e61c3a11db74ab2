import type { Logger } from '../logging/logger';
import type { BackendName } from './window-store';

/**
 * Why a shared-backend call was not used. `outage`: not sent at all, because
 * the backend is in an outage and this call was not the probe.
 */
export type BackendFailureCause = 'timeout' | 'error' | 'outage';

export type GuardedResult<T> =
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      readonly cause: BackendFailureCause;
      readonly error?: unknown;
      /** When the guard expects the backend to be worth asking again (fail-closed Retry-After). */
      readonly retryAfterMs?: number;
    };

/**
 * The seam between the limiter and a shared backend: it bounds how long a
 * call may take and reports failures. Outage handling (probing at a bounded
 * rate, logging once per outage) plugs in here without touching callers.
 */
export interface BackendGuard {
  run<T>(call: () => Promise<T>): Promise<GuardedResult<T>>;
}

export interface DeadlineGuardOptions {
  readonly backend: BackendName;
  /** Deadline for one call. Default 1500. */
  readonly timeoutMs: number;
  readonly logger: Logger;
}

/**
 * Deadline only, one log line per failed call: for tests and tools that want
 * every call to reach the store. The service uses OutageGuard, the default in
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

/**
 * Races a call against a timer. The call itself cannot be cancelled (a
 * firebase-admin transaction keeps going after we stop waiting); the caller
 * just stops waiting for it.
 */
export async function withDeadline<T>(call: () => Promise<T>, timeoutMs: number): Promise<GuardedResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<GuardedResult<T>>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, cause: 'timeout' }), timeoutMs);
    timer.unref();
  });
  // Through then(): a store that throws synchronously is a failure like any other, not a crash.
  const attempt = Promise.resolve().then(call).then(
    (value): GuardedResult<T> => ({ ok: true, value }),
    (error: unknown): GuardedResult<T> => ({ ok: false, cause: 'error', error }),
  );
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A log-safe description: the error's class and code, never its message (it may embed a URL with a password). */
export function describeError(error: unknown): string | undefined {
  if (error === undefined || error === null) return undefined;
  if (typeof error !== 'object') return typeof error;
  const code = (error as { code?: unknown }).code;
  return [errorClassName(error), typeof code === 'string' || typeof code === 'number' ? String(code) : undefined]
    .filter(Boolean)
    .join(':');
}

/** `name`, or the constructor's name when `name` is the generic 'Error' (node-redis's error classes never set it). */
function errorClassName(error: object): string {
  const name = (error as { name?: unknown }).name;
  if (typeof name === 'string' && name !== 'Error') return name;
  const constructorName = (error as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof constructorName === 'string' && constructorName !== '' && constructorName !== 'Object' ? constructorName : 'Error';
}
