import type { App } from 'firebase-admin/app';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { getDatabase, type Database } from 'firebase-admin/database';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import {
  DEADLINE_MS,
  expectFailClosedRefusals,
  expectHealthy,
  expectHungWithoutWaits,
  expectOneOutage,
  MARGIN_MS,
  NO_WAIT_MS,
  PROBE_INTERVAL_MS,
  startOutageApp,
  trafficFor,
  trafficUntilShared,
  type OutageApp,
} from '../support/outage-scenarios';
import { startRtdbTestServer, type RtdbTestServer } from '../support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';

/**
 * Outages of the RTDB backend seen over HTTP, against the RTDB test server
 * (or the emulator) spoken to by the real firebase-admin client.
 *
 * "Back" is measured from the moment the client has reconnected
 * (`.info/connected`): how soon firebase-admin reconnects after a restart is
 * its own backoff (randomised, growing from 1 s), outside the limiter; what
 * the limiter owes is to notice within one probe interval once the database
 * answers again.
 */

const policy = { name: 'default', limit: 100_000, windowMs: 60_000 };
const figures: Record<string, number> = {};

let server: RtdbTestServer;
const apps: App[] = [];
const outageApps: OutageApp[] = [];

beforeAll(async () => {
  server = await startRtdbTestServer();
});

afterEach(async () => {
  await Promise.all(outageApps.splice(0).map((a) => a.close()));
  await Promise.all(apps.splice(0).map((a) => deleteAdminApp(a)));
});

afterAll(async () => {
  await server?.close();
  // Timings for the report; not assertions.
  console.info(`outage-rtdb figures (ms): ${JSON.stringify(figures)}`);
});

async function rtdbApp(failurePolicy: 'fail-open' | 'fail-closed'): Promise<{ app: OutageApp; database: Database }> {
  const adminApp = createAdminApp(server);
  apps.push(adminApp);
  const database = getDatabase(adminApp);
  const app = await startOutageApp(failurePolicy, ({ logger, metrics }) =>
    createRateLimiter({
      store: new RtdbWindowStore({ database, rootPath: 'rateLimits' }),
      policy,
      timeoutMs: DEADLINE_MS,
      probeIntervalMs: PROBE_INTERVAL_MS,
      failurePolicy,
      logger,
      events: metrics,
    }),
  );
  outageApps.push(app);
  return { app, database };
}

/** Resolves (with performance.now()) the next time the client reports itself connected. */
function nextConnected(database: Database): Promise<number> {
  return new Promise((resolve) => {
    const ref = database.ref('.info/connected');
    const onValue = ref.on('value', (snapshot) => {
      if (snapshot.val() === true) {
        ref.off('value', onValue);
        resolve(performance.now());
      }
    });
  });
}

/** Waits for the client to drop its connection, so "during the outage" starts when the client knows. */
function nextDisconnected(database: Database): Promise<void> {
  return new Promise((resolve) => {
    const ref = database.ref('.info/connected');
    const onValue = ref.on('value', (snapshot) => {
      if (snapshot.val() === false) {
        ref.off('value', onValue);
        resolve();
      }
    });
  });
}

describe('RTDB outage over HTTP', () => {
  it('fail-open: stopped mid-traffic then restarted: no 5xx, local while down, shared again within a probe interval, one line each way', async () => {
    const { app, database } = await rtdbApp('fail-open');
    await expectHealthy(app);

    await server.stop();
    const during = await trafficFor(app, 2_000);
    expect(during.every((h) => h.status === 200)).toBe(true);
    expect(during.every((h) => h.shared === false && h.reason === 'local_fallback')).toBe(true);
    // Only the request that met the outage (and perhaps one probe) waited for the deadline.
    expect(during.filter((h) => h.elapsedMs > NO_WAIT_MS).length).toBeLessThanOrEqual(1 + Math.ceil(2_000 / PROBE_INTERVAL_MS));

    const reconnected = nextConnected(database);
    const restartedAt = performance.now();
    await server.restart();
    const connectedAt = await reconnected;
    const { hits, sharedAfterMs } = await trafficUntilShared(app, connectedAt, PROBE_INTERVAL_MS + 1_000 + MARGIN_MS);
    figures.fail_open_reconnect_after_restart = connectedAt - restartedAt;
    figures.fail_open_shared_after_reconnect = sharedAfterMs ?? Number.NaN;
    expect(hits.every((h) => h.status === 200)).toBe(true);
    expect(sharedAfterMs).toBeDefined();
    expect(sharedAfterMs).toBeLessThanOrEqual(PROBE_INTERVAL_MS + 1_000);

    await expectHealthy(app, 3);
    await expectOneOutage(app, 'rtdb');
  });

  it('fail-open: hung (SIGSTOP): the first request waits at most the deadline, the following ones do not wait', async () => {
    const { app } = await rtdbApp('fail-open');
    await expectHealthy(app);

    await expectHungWithoutWaits(app, figures, () => server.suspend(), () => server.resume());
    const resumedAt = performance.now();
    const { sharedAfterMs } = await trafficUntilShared(app, resumedAt, PROBE_INTERVAL_MS + 1_000 + MARGIN_MS);
    figures.hung_shared_after_resume = sharedAfterMs ?? Number.NaN;
    expect(sharedAfterMs).toBeDefined();
    await expectOneOutage(app, 'rtdb');
  });

  it('fail-closed: 503 with Retry-After and reason backend_unavailable while down, counted as refusals, not as rate-limit hits', async () => {
    const { app, database } = await rtdbApp('fail-closed');
    await expectHealthy(app);

    await expectFailClosedRefusals(app, 'rtdb', async () => {
      const disconnected = nextDisconnected(database);
      await server.stop();
      await disconnected;
    });

    const reconnected = nextConnected(database);
    await server.restart();
    const { hits, sharedAfterMs } = await trafficUntilShared(app, await reconnected, PROBE_INTERVAL_MS + 1_000 + MARGIN_MS);
    expect(sharedAfterMs).toBeDefined();
    expect(hits.at(-1)).toMatchObject({ status: 200, shared: true });
    await expectOneOutage(app, 'rtdb');
  });
});
