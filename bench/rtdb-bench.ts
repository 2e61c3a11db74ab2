import { startDelayProxy } from './delay-proxy';
import { getDatabase, type Database } from 'firebase-admin/database';
import { windowNumberAt } from '../src/library/window/fixed-window';
import type { PolicySet, RateLimitPolicy } from '../src/library/window/policy';
import { RtdbWindowStore } from '../src/library/backends/rtdb/rtdb-store';
import { createAdminApp, deleteAdminApp } from '../test/support/rtdb-server/admin-app';
import { startRtdbTestServer, type RtdbTestServer } from '../test/support/rtdb-server';
import { median, percentile, printTable, type BenchTable } from './bench-table';

/**
 * What one shared decision costs against RTDB, next to the cheapest write
 * there is (a bare set()), on a fresh RTDB test server in a child process:
 *
 * - set(): one put, no read, no check. The floor.
 * - our store, key in steady use: a transaction whose first run sees the
 *   listener-cached value, so it is one put with the right hash.
 * - a naive transaction: no listener, so listen + put on an empty cache
 *   (rejected as stale) + put + unlisten.
 *
 * On loopback a round trip is ~0.1 ms, so client CPU dominates the ratios; the
 * same cases also run through a proxy that delays each direction by
 * DELAY_MS, closer to a same-region network, where round trips dominate.
 * Decisions are sequential (latency, not throughput) over a few keys, and all
 * cases run in interleaved blocks so drift on a shared machine hits all alike.
 */

const KEYS = 4;
const ROUNDS = 10;
const PER_BLOCK_LOCAL = 100;
const PER_BLOCK_DELAYED = 30;
const WARMUP = 50;
const DELAY_MS = 1;
/** High enough that every decision is allowed: we time the common path. */
const POLICY: RateLimitPolicy = { name: 'bench', limit: 1_000_000_000, windowMs: 60_000 };
/** The same policy as the one-policy set the stores take. */
const POLICIES: PolicySet = [POLICY];

interface Case {
  readonly network: string;
  readonly name: string;
  readonly perBlock: number;
  readonly run: (i: number) => Promise<unknown>;
  /** Shown for diagnosis; not one of the three the comparison is about. */
  readonly diagnostic?: boolean;
}

function casesOn(database: Database, network: string, perBlock: number, nowMs: number): { cases: Case[]; close: () => Promise<void> } {
  const windowKey = String(windowNumberAt(nowMs, POLICY.windowMs));
  const root = `bench/${network === 'loopback' ? 'local' : 'delayed'}`;
  const steady = new RtdbWindowStore({ database, rootPath: `${root}/store` });
  const cold = new RtdbWindowStore({ database, rootPath: `${root}/cold`, maxListenedKeys: 0 });
  let setCount = 0;
  const base = { network, perBlock };
  // The floor under our store: firebase's transaction on a listened node, with nothing of ours around it.
  for (let k = 0; k < KEYS; k++) database.ref(`${root}/bare/k${k}`).on('value', () => undefined);
  const cases: Case[] = [
    { ...base, name: 'set() round trip', run: (i) => database.ref(`${root}/set/k${i % KEYS}`).set({ [windowKey]: ++setCount }) },
    { ...base, name: 'our store, key in steady use', run: (i) => steady.consume(`k${i % KEYS}`, nowMs, POLICIES, 1) },
    {
      ...base,
      name: 'naive transaction (no listener)',
      run: (i) =>
        database
          .ref(`${root}/naive/k${i % KEYS}`)
          .transaction((current: Record<string, number> | null) => ({ [windowKey]: (current?.[windowKey] ?? 0) + 1 })),
    },
    { ...base, name: 'our store, listener cache off', run: (i) => cold.consume(`k${i % KEYS}`, nowMs, POLICIES, 1), diagnostic: true },
    {
      ...base,
      name: 'bare transaction on a listened node',
      run: (i) =>
        database
          .ref(`${root}/bare/k${i % KEYS}`)
          .transaction((current: Record<string, number> | null) => ({ [windowKey]: (current?.[windowKey] ?? 0) + 1 }), undefined, false),
      diagnostic: true,
    },
  ];
  const close = async () => {
    for (let k = 0; k < KEYS; k++) database.ref(`${root}/bare/k${k}`).off('value');
    await Promise.all([steady.close(), cold.close()]);
  };
  return { cases, close };
}

function rowsFor(cases: Case[], samples: Map<Case, number[]>): (string | number)[][] {
  const setSamples = (network: string) => samples.get(cases.find((c) => c.network === network) as Case) as number[];
  return cases.map((c) => {
    const s = samples.get(c) as number[];
    const p50 = median(s);
    const p99 = percentile(s, 99);
    const ratio = (value: number, of: number) => `${(value / of).toFixed(2)}x`;
    return [
      c.network,
      c.diagnostic ? `${c.name} (diagnostic)` : c.name,
      p50,
      p99,
      ratio(p50, median(setSamples(c.network))),
      ratio(p99, percentile(setSamples(c.network), 99)),
      s.length,
    ];
  });
}

export async function runRtdbBench(): Promise<BenchTable> {
  const server = await startRtdbTestServer();
  const proxy = await startDelayProxy(server.port, DELAY_MS);
  const app = createAdminApp(server);
  // The same server through the proxy; createAdminApp only reads host and databaseUrl.
  const proxied: RtdbTestServer = {
    ...server,
    host: `127.0.0.1:${proxy.port}`,
    databaseUrl: `http://127.0.0.1:${proxy.port}?ns=${server.namespace}`,
  } as RtdbTestServer;
  const delayedApp = createAdminApp(proxied);
  try {
    const nowMs = Date.now();
    const local = casesOn(getDatabase(app), 'loopback', PER_BLOCK_LOCAL, nowMs);
    const delayed = casesOn(getDatabase(delayedApp), `+${DELAY_MS} ms each way`, PER_BLOCK_DELAYED, nowMs);
    const cases = [...local.cases, ...delayed.cases];
    const samples = new Map(cases.map((c) => [c, [] as number[]]));
    try {
      // Warm-up: connections, JIT, the store's listeners, every node existing on the server.
      for (const c of cases) for (let i = 0; i < WARMUP; i++) await c.run(i);
      for (let round = 0; round < ROUNDS; round++) {
        for (const c of cases) {
          const into = samples.get(c) as number[];
          for (let i = 0; i < c.perBlock; i++) {
            const started = performance.now();
            await c.run(i);
            into.push(performance.now() - started);
          }
        }
      }
    } finally {
      await local.close();
      await delayed.close();
    }
    return {
      title: 'RTDB: ms per decision, sequential (test server in a child process)',
      columns: ['network', 'case', 'p50 ms', 'p99 ms', 'p50 vs set()', 'p99 vs set()', 'n'],
      rows: rowsFor(cases, samples),
      notes: [
        `${ROUNDS} interleaved rounds per case (${PER_BLOCK_LOCAL} decisions per block on loopback, ${PER_BLOCK_DELAYED} delayed), ${KEYS} keys, ${WARMUP} warm-up calls each`,
        'steady use: the store keeps a value listener on each recently used key, so its transaction is one put',
        'naive: listen + put rejected as stale (empty cache) + put + unlisten per decision',
        'ratios compare against set() on the same network in the same run',
      ],
    };
  } finally {
    // The server's child process is unref'd, so nothing else keeps the event
    // loop alive while we wait for it to exit; without this the process would
    // quit here, before the table is printed.
    const keepAlive = setInterval(() => undefined, 1_000);
    try {
      await deleteAdminApp(delayedApp);
      await deleteAdminApp(app);
      await proxy.close();
      await server.close();
    } finally {
      clearInterval(keepAlive);
    }
  }
}

if (require.main === module) {
  runRtdbBench().then(printTable, (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
