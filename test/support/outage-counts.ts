import { setTimeout as sleep } from 'node:timers/promises';
import type { AlgorithmName } from '../../src/library/window/algorithms';
import type { RateLimitPolicy } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { WindowRateLimiter } from '../../src/library/limiter/rate-limiter';

/**
 * Issue 19 item 4, written once for every real backend: one token, one
 * instance, a store that freezes (or slows past the deadline, or restarts)
 * mid-window. Over the window the token must be admitted exactly its figure,
 * and never refused while the last answer it got said `remaining > 0`.
 */

export const COUNT_LIMIT = 10;
export const COUNT_DEADLINE_MS = 200;
export const COUNT_PROBE_INTERVAL_MS = 200;

/** Burst = limit, so with the decision clock held still every algorithm counts to the same figure. */
export function countPolicy(algorithm: AlgorithmName): RateLimitPolicy {
  return { name: 'default', algorithm, limit: COUNT_LIMIT, windowMs: 60_000, ...(algorithm.endsWith('bucket') ? { burst: COUNT_LIMIT } : {}) };
}

export interface CountOutcome {
  readonly admitted: number;
  /** Refusals that came right after an answer with remaining > 0 (sequential calls only). */
  readonly refusedWithRemaining: number;
  readonly localDecisions: number;
}

export interface CountScenario {
  readonly limiter: RateLimiter;
  readonly key: string;
  /** Makes the store stop answering in time; resolves when it is so. */
  readonly hiccup: () => Promise<unknown>;
  /** Mends it. */
  readonly mend: () => Promise<unknown>;
  /** How long the calls go on during the hiccup. Default 3000. */
  readonly hiccupMs?: number;
}

/**
 * 2 shared calls; at the hiccup 2 calls at once (both in flight when it
 * starts), then one call every 700 ms for `hiccupMs` (each one a probe, sent
 * and given up on); mended; calls until a shared answer, until the limiter
 * has settled what it owes, then until a shared refusal. Fewer calls during
 * the hiccup than the figure, so what the token has left afterwards shows
 * whether the store counted true.
 */
export async function countThroughHiccup(s: CountScenario): Promise<CountOutcome> {
  let admitted = 0;
  let refusedWithRemaining = 0;
  let localDecisions = 0;
  let lastRemaining = COUNT_LIMIT;
  const one = async (): Promise<{ allowed: boolean; shared: boolean }> => {
    const d = await s.limiter.consume(s.key);
    if (d.allowed) admitted++;
    else if (lastRemaining > 0) refusedWithRemaining++;
    if (!d.shared) localDecisions++;
    lastRemaining = d.remaining;
    return d;
  };
  // Another key first, until shared: a first call that met a cold script cache or a loaded machine past the
  // deadline opens an outage of its own, which is not the hiccup under test.
  const warmUntil = performance.now() + 10_000;
  while (!(await s.limiter.consume(`${s.key}_warm`, { cost: 0 })).shared) {
    if (performance.now() > warmUntil) throw new Error('the store gave no shared answer within 10 s before the hiccup');
    await sleep(100);
  }
  for (let i = 0; i < 2; i++) {
    if (!(await one()).shared) throw new Error('a call before the hiccup was not shared');
  }
  await s.hiccup();
  const batch = await Promise.all([0, 1].map(() => s.limiter.consume(s.key)));
  for (const d of batch) {
    if (d.allowed) admitted++;
    if (!d.shared) localDecisions++;
  }
  lastRemaining = Math.min(...batch.map((d) => d.remaining));
  const endAt = performance.now() + (s.hiccupMs ?? 3_000);
  while (performance.now() < endAt) {
    await one();
    await sleep(700);
  }
  await s.mend();
  const giveUpAt = performance.now() + 20_000;
  while (!(await one()).shared) {
    if (performance.now() > giveUpAt) throw new Error('no shared decision within 20 s of mending the store');
    await sleep(50);
  }
  const limiter = s.limiter as WindowRateLimiter;
  while (limiter.inFlightUnits + limiter.unreconciledUnits > 0) {
    if (performance.now() > giveUpAt) throw new Error(`the limiter still owes ${limiter.unreconciledUnits} and waits on ${limiter.inFlightUnits} units`);
    await sleep(50);
    await limiter.reconcile();
  }
  for (let i = 0; i < 2 * COUNT_LIMIT; i++) {
    const d = await one();
    if (!d.allowed && d.shared) break;
  }
  return { admitted, refusedWithRemaining, localDecisions };
}
