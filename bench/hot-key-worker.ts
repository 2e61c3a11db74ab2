import { getDatabase } from 'firebase-admin/database';
import { createRateLimiter, createRedisStore, createRtdbStore } from '../src/library';
import { isContention, isRtdbMaxRetry } from '../src/library/limiter/contention';
import type { LimitStore } from '../src/library/limiter/limit-store';
import type { RateLimiter } from '../src/library/limiter/rate-limiter';
import type { Decision } from '../src/library/window/decision';
import type { RateLimitPolicy } from '../src/library/window/policy';
import type { RtdbTestServer } from '../test/support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../test/support/rtdb-server/admin-app';
import { serveBenchRequests } from './bench-child';
import { offerOpenLoop } from './open-loop';

/**
 * One of the processes of `npm run bench -- hot-key`: its own store client
 * (a firebase-admin app, or a Redis connection) and its own limiter from the
 * library entry, offering decisions on the one shared key at a fixed rate,
 * open loop: a call starts on time whether or not the earlier ones have
 * answered, as independent instances behind a load balancer would.
 */

export type HotKeyBackend = 'rtdb' | 'redis';

/** argv of the worker, as JSON: where the store is and how the limiter is built. */
export interface WorkerConfig {
  readonly backend: HotKeyBackend;
  /** RTDB: the test server's host and databaseUrl; Redis: its URL. */
  readonly host?: string;
  readonly databaseUrl?: string;
  readonly redisUrl?: string;
  readonly policy: RateLimitPolicy;
  readonly leases: boolean;
  /** hotKeys.hotRatePerSecond; undefined: the library's default (200). */
  readonly hotRatePerSecond?: number;
  readonly tag: string;
}

export interface RunRequest {
  readonly key: string;
  readonly perSecond: number;
  readonly durationMs: number;
  /** Epoch ms at which every process starts offering (a window's start). */
  readonly startAtMs: number;
}

export interface RunReport {
  readonly offered: number;
  /** Allowed calls by the window they were counted in (the decision's resetAtMs). */
  readonly admittedByResetAtMs: Record<string, number>;
  readonly refused: number;
  /** Decisions answered from this process's own window (`shared: false`), allowed or not. */
  readonly local: number;
  readonly localAllowed: number;
  /** Rejected consume promises that were RTDB's maxretry or a ContentionError: what ADR 0064 says never reaches a caller. */
  readonly maxretry: number;
  readonly otherErrors: number;
  /** Neither answered nor failed DRAIN_MS after the run's end. */
  readonly unanswered: number;
  readonly latenciesMs: number[];
  /** Store consumes of more than one unit: lease takes (a take of a single unit looks like any call and is not counted). */
  readonly leaseTakes: number;
  readonly leaseUnits: number;
  /** Store adjusts: leases given back, and write-backs of what was granted locally (ADR 0046). */
  readonly adjusts: number;
  /** The live instances this process counted from the heartbeats when the run started (ADR 0067). */
  readonly fleetInstances: number;
}

/** What the limiter asked of its store, counted on the way through. */
interface StoreCalls {
  leaseTakes: number;
  leaseUnits: number;
  adjusts: number;
}

/** Counts on the store instance itself, so the limiter sees the same object (its backend, `shared`, its class). */
function countCalls(store: LimitStore): StoreCalls {
  const calls: StoreCalls = { leaseTakes: 0, leaseUnits: 0, adjusts: 0 };
  const consume = store.consume.bind(store);
  const adjust = store.adjust.bind(store);
  store.consume = (key, nowMs, policies, cost) => {
    if (cost > 1) {
      calls.leaseTakes++;
      calls.leaseUnits += cost;
    }
    return consume(key, nowMs, policies, cost);
  };
  store.adjust = (key, nowMs, policies, adjustments) => {
    calls.adjusts++;
    return adjust(key, nowMs, policies, adjustments);
  };
  return calls;
}

/** How long after its end a run waits for its last answers. */
const DRAIN_MS = 10_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function offer(limiter: RateLimiter, calls: StoreCalls, request: RunRequest): Promise<RunReport> {
  const before = { ...calls };
  const admittedByResetAtMs: Record<string, number> = {};
  const counts = { answered: 0, refused: 0, local: 0, localAllowed: 0, maxretry: 0, otherErrors: 0 };
  const latenciesMs: number[] = [];
  const total = Math.round((request.perSecond * request.durationMs) / 1000);
  const answer = (decision: Decision, t0: number): void => {
    counts.answered++;
    latenciesMs.push(performance.now() - t0);
    if (!decision.shared) counts.local++;
    if (decision.allowed) {
      const window = String(decision.resetAtMs);
      admittedByResetAtMs[window] = (admittedByResetAtMs[window] ?? 0) + 1;
      if (!decision.shared) counts.localAllowed++;
    } else counts.refused++;
  };
  const fail = (error: unknown): void => {
    if (isRtdbMaxRetry(error) || isContention(error)) counts.maxretry++;
    else counts.otherErrors++;
  };
  // Every process is up by now: one beat each, so an outage's local windows divide by the whole fleet (ADR 0067).
  await limiter.fleet?.beat();
  const fleetInstances = limiter.fleet?.current() ?? 1;
  await offerOpenLoop(request.startAtMs, request.perSecond, total, DRAIN_MS, () => {
    const t0 = performance.now();
    return limiter.consume(request.key).then((decision) => answer(decision, t0), fail);
  });
  const { answered, ...rest } = counts;
  return {
    offered: total,
    admittedByResetAtMs,
    ...rest,
    unanswered: total - answered - counts.maxretry - counts.otherErrors,
    latenciesMs,
    leaseTakes: calls.leaseTakes - before.leaseTakes,
    leaseUnits: calls.leaseUnits - before.leaseUnits,
    adjusts: calls.adjusts - before.adjusts,
    fleetInstances,
  };
}

/** Until a decision comes from the shared store: a limiter still connecting answers from its own window. */
async function untilShared(limiter: RateLimiter, tag: string): Promise<void> {
  const deadlineMs = Date.now() + 10_000;
  while (!(await limiter.consume(`warm_${tag}`)).shared) {
    if (Date.now() > deadlineMs) throw new Error(`hot-key worker ${tag}: the store still answers locally after 10 s`);
    await sleep(50);
  }
}

async function child(config: WorkerConfig): Promise<void> {
  const app = config.backend === 'rtdb' ? createAdminApp({ host: config.host, databaseUrl: config.databaseUrl } as RtdbTestServer) : undefined;
  const store =
    app !== undefined
      ? await createRtdbStore({ database: getDatabase(app), rootPath: 'benchHotKey' })
      : await createRedisStore({ url: config.redisUrl ?? '', keyPrefix: 'bench-hot:' });
  const calls = countCalls(store);
  // The library's defaults otherwise (deadline, probe interval, hot-key knobs): the figures are what a user gets.
  const limiter = await createRateLimiter({ store, policy: config.policy, ...(config.leases ? { hotKeys: config.hotRatePerSecond === undefined ? {} : { hotRatePerSecond: config.hotRatePerSecond } } : {}) });
  // Connected before the first call, so no connect-time outage (and its probe interval) skews the run.
  await limiter.whenReady(10_000);
  await untilShared(limiter, config.tag);
  process.send?.({ ready: config.tag });
  serveBenchRequests(
    (request: RunRequest) => offer(limiter, calls, request),
    () => limiter.close().then(() => (app === undefined ? undefined : deleteAdminApp(app))),
  );
}

if (require.main === module) {
  const [json] = process.argv.slice(2);
  if (json === undefined) throw new Error('usage: hot-key-worker.ts CONFIG_JSON');
  child(JSON.parse(json) as WorkerConfig).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
