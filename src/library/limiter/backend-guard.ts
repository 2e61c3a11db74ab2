import { isContention } from './contention';
import type { WaitBudget } from './wait-budget';

/**
 * Why a shared-backend call was not used. `outage`: not sent at all, because
 * the backend is in an outage and this call was not the probe. `contention`:
 * the backend is up, but other writers kept winning this key (src/library/limiter/contention.ts);
 * it says nothing of the other keys.
 */
export type BackendFailureCause = 'timeout' | 'error' | 'outage' | 'contention';

/**
 * What a call that was given up on did in the end: a Redis command stuck in a
 * frozen server's socket, or a firebase-admin transaction, still runs once
 * the backend answers. `landed`: it took effect on the store (with its value);
 * otherwise it failed there and changed nothing.
 */
export type LateOutcome<T> = { readonly landed: true; readonly value: T } | { readonly landed: false };

export type GuardedResult<T> =
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      readonly cause: BackendFailureCause;
      readonly error?: unknown;
      /** When the guard expects the backend to be worth asking again (fail-closed Retry-After). */
      readonly retryAfterMs?: number;
      /**
       * Present when the call was sent and may still take effect (it timed
       * out, here or in the store): settles once it is known whether it did.
       * Never rejects. Absent: the call changed nothing on the store.
       */
      readonly late?: Promise<LateOutcome<T>>;
    };

/**
 * The seam between the limiter and a shared backend: it bounds how long a
 * call may take and reports failures. Outage handling (probing at a bounded
 * rate, logging once per outage) plugs in here without touching callers.
 */
export interface BackendGuard {
  /**
   * `budget`: the request's wait budget; the call gets min(the guard's
   * deadline, what is left), and none at all when nothing is left. Default:
   * the guard's deadline alone. `shard`: which shard of the store the call
   * goes to (LimitStore.shardOf), for a guard that keeps one outage per
   * shard (ShardedGuard); a guard of the whole store ignores it.
   */
  run<T>(call: () => Promise<T>, budget?: WaitBudget, shard?: string): Promise<GuardedResult<T>>;
}

const LATE = Symbol('firelimit.lateOutcome');

/**
 * Marks a store's own timeout error with what the abandoned call did in the
 * end, so the limiter can count it once (ADR 0046). Returns the error.
 */
export function withLateOutcome<E extends object>(error: E, late: Promise<LateOutcome<unknown>>): E {
  Object.defineProperty(error, LATE, { value: late, enumerable: false, configurable: true });
  return error;
}

/** The late outcome a store attached to its error (withLateOutcome), if any. */
export function lateOutcomeOf(error: unknown): Promise<LateOutcome<unknown>> | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  return (error as { [LATE]?: Promise<LateOutcome<unknown>> })[LATE];
}

/** A store's late outcome seen through a mapping of its value (a raw reply parsed); a value that fails to map did not land as one. */
export function mapLateOutcome<A, B>(late: Promise<LateOutcome<A>>, map: (value: A) => B): Promise<LateOutcome<B>> {
  return late.then((outcome): LateOutcome<B> => {
    if (!outcome.landed) return outcome;
    try {
      return { landed: true, value: map(outcome.value) };
    } catch {
      return { landed: false };
    }
  });
}

const NOT_LANDED: LateOutcome<never> = { landed: false };

/**
 * Races a call against a timer. The call itself cannot be cancelled (a
 * firebase-admin transaction keeps going after we stop waiting); the caller
 * just stops waiting for it, and learns from `late` what it did in the end.
 */
export async function withDeadline<T>(call: () => Promise<T>, timeoutMs: number): Promise<GuardedResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  // Through then(): a store that throws synchronously is a failure like any other, not a crash.
  const attempt = Promise.resolve().then(call).then(
    (value): GuardedResult<T> => ({ ok: true, value }),
    (error: unknown): GuardedResult<T> => {
      const late = lateOutcomeOf(error) as Promise<LateOutcome<T>> | undefined;
      const cause = isContention(error) ? 'contention' : 'error';
      return late === undefined ? { ok: false, cause, error } : { ok: false, cause, error, late };
    },
  );
  const timeout = new Promise<GuardedResult<T>>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, cause: 'timeout', late: attempt.then(lateOf) }), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function lateOf<T>(result: GuardedResult<T>): LateOutcome<T> | Promise<LateOutcome<T>> {
  if (result.ok) return { landed: true, value: result.value };
  return result.late ?? NOT_LANDED;
}
