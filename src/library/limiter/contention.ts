/**
 * Contention on one key (RTDB's `maxretry`: the transaction lost the race 25
 * times to other writers of the same node) says the database is up and busy
 * with that key, not that it is down. It must not open the store-wide outage
 * (issue 18: at 200–800 decisions/s on one hot key, each `maxretry` put every
 * key of the instance on its local window for a probe interval). The store
 * retries a few times with backoff; what is still contended is answered from
 * that key's local window alone.
 */

/** Retries after the first contended attempt; with the backoff below, well inside the 1.5 s default deadline. */
export const CONTENTION_RETRIES = 2;
/** The first retry's backoff ceiling; doubled per retry. */
export const CONTENTION_BASE_BACKOFF_MS = 20;

/** firebase-admin gives up a transaction with `new Error('maxretry')`: no code, only that exact message. */
export function isRtdbMaxRetry(error: unknown): boolean {
  return error instanceof Error && error.message === 'maxretry';
}

/** A decision the store gave up on after its retries, because other writers kept winning the key. */
export class ContentionError extends Error {
  readonly code = 'ERR_FIRELIMIT_CONTENTION';
  constructor(
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(`the key stayed contended after ${attempts} attempts`, options);
    this.name = 'ContentionError';
  }
}

/** True for a store's ContentionError (by code, so it survives a copy of this module). */
export function isContention(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ERR_FIRELIMIT_CONTENTION';
}

/**
 * Full-jitter backoff (a uniform wait in [0, base × 2^retry)): contenders that
 * collided spread out instead of colliding again in step. `random` in [0, 1).
 */
export function contentionBackoffMs(retry: number, random: number, baseMs: number = CONTENTION_BASE_BACKOFF_MS): number {
  if (!Number.isInteger(retry) || retry < 0) throw new RangeError(`retry must be a non-negative integer, got ${retry}`);
  const clamped = Math.min(Math.max(random, 0), 1 - Number.EPSILON);
  return Math.floor(clamped * baseMs * 2 ** retry);
}

export interface ContentionRetryOptions {
  readonly retries?: number;
  readonly baseBackoffMs?: number;
  readonly random?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

const realSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
  });

/**
 * Runs `attempt` again while `isContended` says its failure was contention,
 * at most `retries` more times, then throws a ContentionError. Any other
 * failure is thrown as it is, at once. Safe only for attempts that changed
 * nothing when they failed (a transaction that gave up wrote nothing).
 */
export async function retryOnContention<T>(
  attempt: () => Promise<T>,
  isContended: (error: unknown) => boolean,
  options: ContentionRetryOptions = {},
): Promise<T> {
  const retries = options.retries ?? CONTENTION_RETRIES;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? realSleep;
  for (let retry = 0; ; retry++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isContended(error)) throw error;
      if (retry >= retries) throw new ContentionError(retry + 1, { cause: error });
      await sleep(contentionBackoffMs(retry, random(), options.baseBackoffMs));
    }
  }
}
