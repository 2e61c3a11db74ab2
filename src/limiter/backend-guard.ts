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
