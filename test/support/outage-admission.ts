import { setTimeout as sleep } from 'node:timers/promises';
import type { RateLimitPolicy } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import type { OutageShareMode } from '../../src/library/limiter/outage-share';

/**
 * How many calls a window admits when the shared store fails inside it,
 * with several instances: the figure the fail-open policy is judged by.
 * Written once, run against each real backend by the integration test and by
 * `npm run bench -- admission`.
 */

export const ADMISSION_POLICY: RateLimitPolicy = { name: 'default', limit: 10, windowMs: 60_000 };
/** Short, so the call that meets the outage waits little; probing as often keeps recovery quick. */
export const ADMISSION_DEADLINE_MS = 200;
export const ADMISSION_PROBE_INTERVAL_MS = 200;

export interface AdmissionBackend {
  readonly name: string;
  /** One limiter per instance, each on its own client (own connection, own cache), all on one server. */
  instances(count: number, clock: () => number, outageShare: OutageShareMode): Promise<RateLimiter[]>;
  /** The server stops answering (SIGSTOP): connections stay open. */
  freeze(): Promise<void>;
  thaw(): Promise<void>;
  /** The server comes back empty, as after a crash without persistence. */
  restartEmpty(): Promise<void>;
}

export interface AdmissionScenario {
  /** Calls each instance makes before the outage (shared decisions). */
  readonly before: readonly number[];
  /** Calls each instance makes while the store is down. */
  readonly during: number;
  /** Calls each instance makes once it decides on the shared store again. */
  readonly after: number;
  /** Restart the server empty instead of thawing it. */
  readonly restart: boolean;
  /** RATE_LIMIT_OUTAGE_SHARE; default 'fleet' (ADR 0067). */
  readonly share?: OutageShareMode;
}

export interface AdmissionResult {
  readonly admitted: number;
  readonly beforeOutage: number;
  readonly duringOutage: number;
  readonly afterRecovery: number;
  /** The documented worst case: instances x limit. */
  readonly bound: number;
  /** limit plus what the other instances granted that this one could not know: the shared count C plus sum(limit - seen_i). */
  readonly aim: number;
  /** The live instances each counted (the least of them); 1 where the store keeps no heartbeats or the share is off. */
  readonly fleetCounted: number;
  /** aim with each instance's share (ADR 0067): C plus, per instance, max(1, floor((limit - seen_i) / fleetCounted)). */
  readonly shareAim: number;
}

export async function measureAdmission(backend: AdmissionBackend, scenario: AdmissionScenario): Promise<AdmissionResult> {
  const { limit, windowMs } = ADMISSION_POLICY;
  // A decision clock pinned inside one window, so the whole scenario is one window whatever the real time.
  const nowMs = (Math.floor(Date.now() / windowMs) + 1) * windowMs + 1_000;
  const limiters = await backend.instances(scenario.before.length, () => nowMs, scenario.share ?? 'fleet');
  const key = `tok_admission_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  try {
    // Each instance beats once more, now that all are up, so each counts the whole fleet (ADR 0067), as it
    // would within one heartbeat interval in a deployment.
    for (const limiter of limiters) await limiter.fleet?.beat();
    const fleetCounted = Math.min(...limiters.map((limiter) => limiter.fleet?.current() ?? 1));
    let beforeOutage = 0;
    const seen: number[] = [];
    for (const [i, calls] of scenario.before.entries()) {
      let remaining = limit;
      for (let c = 0; c < calls; c++) {
        const d = await (limiters[i] as RateLimiter).consume(key);
        if (!d.shared) throw new Error(`${backend.name}: a call before the outage was not shared (${d.reason})`);
        if (d.allowed) beforeOutage++;
        remaining = d.remaining;
      }
      seen.push(limit - remaining);
    }

    await backend.freeze();
    let duringOutage = 0;
    for (const limiter of limiters) {
      for (let c = 0; c < scenario.during; c++) if ((await limiter.consume(key)).allowed) duringOutage++;
    }
    if (scenario.restart) await backend.restartEmpty();
    else await backend.thaw();

    let afterRecovery = 0;
    for (const limiter of limiters) {
      afterRecovery += await untilShared(limiter, key, backend.name);
      for (let c = 0; c < scenario.after; c++) if ((await limiter.consume(key)).allowed) afterRecovery++;
    }
    const sharedBefore = beforeOutage;
    const aim = sharedBefore + seen.reduce((sum, s) => sum + (limit - s), 0);
    return {
      admitted: beforeOutage + duringOutage + afterRecovery,
      beforeOutage,
      duringOutage,
      afterRecovery,
      bound: limiters.length * limit,
      aim: Math.min(aim, limiters.length * limit),
      fleetCounted,
      shareAim: Math.min(aim, sharedBefore + seen.reduce((sum, s) => sum + (limit - s <= 0 ? 0 : Math.max(1, Math.floor((limit - s) / fleetCounted))), 0)),
    };
  } finally {
    await Promise.all(limiters.map((l) => l.close()));
  }
}

/** Calls until a decision comes from the shared store again (the store is back); returns the calls admitted meanwhile. */
async function untilShared(limiter: RateLimiter, key: string, name: string): Promise<number> {
  const deadline = Date.now() + 15_000;
  let admitted = 0;
  while (Date.now() < deadline) {
    const d = await limiter.consume(key);
    if (d.allowed) admitted++;
    if (d.shared) return admitted;
    await sleep(ADMISSION_PROBE_INTERVAL_MS / 2);
  }
  throw new Error(`${name}: no shared decision within 15 s of the store coming back`);
}
