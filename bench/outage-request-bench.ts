import { setTimeout as sleep } from 'node:timers/promises';
import type { App } from 'firebase-admin/app';
import { getDatabase } from 'firebase-admin/database';
import type { BackendGuard } from '../src/library/limiter/backend-guard';
import { createRateLimiter } from '../src/library/limiter/create-rate-limiter';
import type { LimitStore } from '../src/library/limiter/limit-store';
import { OutageGuard } from '../src/library/limiter/outage-guard';
import type { RateLimitPolicy } from '../src/library/window/policy';
import type { RateLimiter } from '../src/library/limiter/rate-limiter';
import { RedisWindowStore } from '../src/library/backends/redis/redis-store';
import { RtdbWindowStore } from '../src/library/backends/rtdb/rtdb-store';
import { silentLogger } from '../src/shared/logger';
import { startRedisServer } from '../test/support/redis-server';
import { startRtdbTestServer } from '../test/support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../test/support/rtdb-server/admin-app';
import { median, percentile, type BenchTable } from './bench-table';

/**
 * How long a request waits for its shared stores when every store is frozen
 * (SIGSTOP): the request path's two limits on one backend, the sign-in budget
 * (a cost-0 read) then the token limit, one after the other, as
 * src/http/auth-middleware.ts and the charge middleware call them. Side by
 * side: one outage guard per store (ADR 0047, what the service builds now)
 * and one guard per limiter (before). Issue 19's target: no request waits
 * more than the deadline + 50 ms (p99 over 200 requests).
 */

const DEADLINE_MS = 500;
const PROBE_INTERVAL_MS = 1_000;
const REQUESTS = 200;
/** Spread over 4 s, so the probes of an outage (one a second) land among them, as in steady traffic. */
const GAP_MS = 20;
const TOKEN_POLICY: RateLimitPolicy = { name: 'default', limit: 1_000_000, windowMs: 60_000 };
const SIGN_IN_POLICY: RateLimitPolicy = { name: 'auth-failures', limit: 1_000_000, windowMs: 60_000 };

interface Frozen {
  readonly name: string;
  store(namespace: string): LimitStore;
  freeze(): Promise<void>;
  thaw(): Promise<void>;
  close(): Promise<void>;
}

async function twoLimiters(backend: Frozen | undefined, shared: boolean): Promise<[RateLimiter, RateLimiter]> {
  if (backend === undefined) return [await createRateLimiter({ policy: SIGN_IN_POLICY }), await createRateLimiter({ policy: TOKEN_POLICY })];
  const signInStore = backend.store('authFailures');
  const guard: BackendGuard | undefined = shared
    ? new OutageGuard({ backend: signInStore.backend, timeoutMs: DEADLINE_MS, probeIntervalMs: PROBE_INTERVAL_MS, logger: silentLogger })
    : undefined;
  const common = { timeoutMs: DEADLINE_MS, probeIntervalMs: PROBE_INTERVAL_MS, guard } as const;
  const limiters: [RateLimiter, RateLimiter] = [
    await createRateLimiter({ ...common, policy: SIGN_IN_POLICY, store: signInStore }),
    await createRateLimiter({ ...common, policy: TOKEN_POLICY, store: backend.store('rateLimits') }),
  ];
  for (const l of limiters) await l.whenReady(5_000);
  return limiters;
}

async function requestWaits(backend: Frozen | undefined, shared: boolean): Promise<number[]> {
  const [signIn, token] = await twoLimiters(backend, shared);
  try {
    // Shared answers first: the outage is what is measured.
    await signIn.consume('addr_bench', { cost: 0 });
    await token.consume('tok_bench');
    await backend?.freeze();
    const waits: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const startedAt = performance.now();
      await signIn.consume('addr_bench', { cost: 0 });
      await token.consume('tok_bench');
      waits.push(performance.now() - startedAt);
      await sleep(GAP_MS);
    }
    return waits;
  } finally {
    await backend?.thaw();
    await Promise.all([signIn.close(), token.close()]);
  }
}

export async function runOutageRequestBench(): Promise<BenchTable> {
  // The guard's deadline timers are unref'd and a frozen server answers nothing: keep the loop up.
  const keepAlive = setInterval(() => undefined, 1_000);
  try {
    return await measure();
  } finally {
    clearInterval(keepAlive);
  }
}

async function measure(): Promise<BenchTable> {
  const redis = await startRedisServer();
  const rtdb = await startRtdbTestServer();
  const apps: App[] = [];
  const backends: Frozen[] = [
    {
      name: 'redis',
      store: (namespace) => new RedisWindowStore({ url: redis.url, keyPrefix: `bench:${namespace}:`, commandTimeoutMs: DEADLINE_MS }),
      freeze: async () => redis.suspend(),
      thaw: async () => redis.resume(),
      close: () => redis.close(),
    },
    {
      name: 'rtdb',
      store: (namespace) => {
        const app = createAdminApp(rtdb);
        apps.push(app);
        return new RtdbWindowStore({ database: getDatabase(app), rootPath: namespace });
      },
      freeze: () => rtdb.suspend(),
      thaw: () => rtdb.resume(),
      close: async () => {
        await Promise.all(apps.splice(0).map((a) => deleteAdminApp(a)));
        await rtdb.close();
      },
    },
  ];
  const rows: (string | number)[][] = [];
  try {
    const runs: { name: string; backend: Frozen | undefined; shared: boolean }[] = [
      { name: 'memory (no shared store)', backend: undefined, shared: false },
      ...backends.flatMap((b) => [
        { name: `${b.name} frozen, one guard per limiter (before)`, backend: b, shared: false },
        { name: `${b.name} frozen, one guard per store (ADR 0047)`, backend: b, shared: true },
      ]),
    ];
    for (const run of runs) {
      const waits = (await requestWaits(run.backend, run.shared)).sort((a, b) => a - b);
      const p99 = percentile(waits, 99);
      rows.push([run.name, median(waits), p99, waits.at(-1) ?? Number.NaN, waits.filter((w) => w > DEADLINE_MS + 50).length, p99 <= DEADLINE_MS + 50 ? 'yes' : 'no']);
    }
  } finally {
    for (const b of backends) await b.close();
  }
  return {
    title: `Request wait with every store frozen (SIGSTOP): sign-in budget then token limit, ${REQUESTS} requests one per ${GAP_MS} ms, deadline ${DEADLINE_MS} ms, probe every ${PROBE_INTERVAL_MS} ms`,
    columns: ['backend, guards', 'p50 ms', 'p99 ms', 'max ms', `requests > ${DEADLINE_MS + 50} ms`, 'p99 within deadline + 50 ms'],
    rows,
    notes: [
      'a request that meets the outage or a probe waits the deadline; with one guard per limiter each limiter meets it in turn',
      'not measured here: the gateway quota (a third call on the same store, which shares the guard the same way in the service)',
    ],
  };
}

if (require.main === module) {
  void runOutageRequestBench().then(
    (t) => console.log(JSON.stringify(t, null, 2)),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
