import { getDatabase } from 'firebase-admin/database';
import { isContention, isRtdbMaxRetry } from '../src/library/limiter/contention';
import { RtdbUpstreamQuotaStore } from '../src/library/backends/rtdb/upstream-rtdb-store';
import { CachedUpstreamQuota } from '../src/library/quota/upstream-cursor-cache';
import type { UpstreamPolicy } from '../src/library/schedule/upstream-policy';
import type { UpstreamQuotaStore } from '../src/library/schedule/upstream-quota-store';
import type { RtdbTestServer } from '../test/support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../test/support/rtdb-server/admin-app';
import { serveBenchRequests } from './bench-child';
import { offerOpenLoop } from './open-loop';

/**
 * One of the three processes of `npm run bench -- upstream-hot-key`: its own
 * firebase-admin client on the shared RTDB test server, offering decisions on
 * one quota key at a fixed rate (open loop: a call is started on time whether
 * or not the earlier ones have answered, as independent integrators would).
 */
export interface StepRequest {
  readonly key: string;
  readonly policy: UpstreamPolicy;
  readonly cached: boolean;
  readonly perSecond: number;
  readonly durationMs: number;
  /** Epoch ms at which all three processes start offering. */
  readonly startAtMs: number;
}

export interface StepReport {
  readonly offered: number;
  readonly answered: number;
  /** Answered before the step's end + 1 s: what the key sustained, not what drained later. */
  readonly answeredInTime: number;
  readonly runs: number;
  readonly reserved: number;
  readonly rejected: number;
  readonly maxretry: number;
  readonly otherErrors: number;
  /** Neither answered nor failed DRAIN_MS after the step's end (transactions still retrying). */
  readonly unanswered: number;
  readonly latenciesMs: number[];
  readonly transactions: number;
  readonly updateRuns: number;
  readonly confirmingWrites: number;
  readonly answeredLocally: number;
}

/** How long after its end a step waits for its last answers. */
const DRAIN_MS = 10_000;


/**
 * firebase's transaction gives up with `new Error('maxretry')` after 25 runs; the store retries that
 * twice with backoff and then throws a ContentionError (ADR 0064). Either is the key still contended.
 */
function isMaxRetry(error: unknown): boolean {
  return isRtdbMaxRetry(error) || isContention(error);
}

async function step(rtdb: RtdbUpstreamQuotaStore, request: StepRequest, tag: string): Promise<StepReport> {
  const cache = request.cached ? new CachedUpstreamQuota({ store: rtdb, maxStalenessMs: 1000 }) : undefined;
  const store: UpstreamQuotaStore = cache ?? rtdb;
  const before = rtdb.stats;
  const counts = { answered: 0, answeredInTime: 0, runs: 0, reserved: 0, rejected: 0, maxretry: 0, otherErrors: 0 };
  const latenciesMs: number[] = [];
  const total = Math.round((request.perSecond * request.durationMs) / 1000);
  const endMs = request.startAtMs + request.durationMs;
  await offerOpenLoop(request.startAtMs, request.perSecond, total, DRAIN_MS, (i) => {
    const t0 = performance.now();
    return store.schedule(request.key, Date.now(), { tokenId: `tok_${tag}_${i}`, tool: 'search' }, request.policy).then(
      ({ outcome }) => {
        counts.answered++;
        if (Date.now() <= endMs + 1000) counts.answeredInTime++;
        latenciesMs.push(performance.now() - t0);
        if (outcome.status === 'run') counts.runs++;
        else if (outcome.status === 'reserved') counts.reserved++;
        else counts.rejected++;
      },
      (error: unknown) => {
        if (isMaxRetry(error)) counts.maxretry++;
        else counts.otherErrors++;
      },
    );
  });
  const after = rtdb.stats;
  return {
    offered: total,
    ...counts,
    unanswered: total - counts.answered - counts.maxretry - counts.otherErrors,
    latenciesMs,
    transactions: after.transactionsStarted - before.transactionsStarted,
    updateRuns: after.updateRuns - before.updateRuns,
    confirmingWrites: after.confirmingWrites - before.confirmingWrites,
    answeredLocally: cache?.stats.answeredLocally ?? 0,
  };
}

async function child(host: string, databaseUrl: string, tag: string): Promise<void> {
  const app = createAdminApp({ host, databaseUrl } as RtdbTestServer);
  const rtdb = new RtdbUpstreamQuotaStore({ database: getDatabase(app), rootPath: 'benchUpstream' });
  await getDatabase(app).ref('benchUpstream/warm').set(1);
  process.send?.({ ready: tag });
  serveBenchRequests(
    (request: StepRequest) => step(rtdb, request, tag),
    () => rtdb.close().then(() => deleteAdminApp(app)),
  );
}

if (require.main === module) {
  const [host, databaseUrl, tag] = process.argv.slice(2);
  if (host === undefined || databaseUrl === undefined || tag === undefined) throw new Error('usage: upstream-hot-key-worker.ts HOST DATABASE_URL TAG');
  child(host, databaseUrl, tag).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
