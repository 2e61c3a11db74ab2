import type { App } from 'firebase-admin/app';
import { getDatabase, type Database } from 'firebase-admin/database';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';

let server: RtdbTestServer;
let app: App;
let database: Database;

beforeAll(async () => {
  server = await rtdbForTests();
  app = createAdminApp(server);
  database = getDatabase(app);
});

afterAll(async () => {
  await deleteAdminApp(app);
  await server.close();
});

it('three leasing limiters on one hot RTDB key admit no more than the limit and lose at most their held leases, every answer shared', async () => {
  const LIMIT = 300;
  // One frozen clock: every call in one window, and the key hot from its 20th decision.
  const clock = (): number => 1_700_000_000_000;
  const limiters: RateLimiter[] = [];
  for (let i = 0; i < 3; i++) {
    limiters.push(
      await createRateLimiter({
        store: new RtdbWindowStore({ database, rootPath: 'hotLeases' }),
        policy: { name: 'hot', limit: LIMIT, windowMs: 60_000 },
        clock,
        timeoutMs: 10_000,
        hotKeys: { hotRatePerSecond: 20, maxLeaseUnits: 25 },
      }),
    );
  }
  const decisions = await Promise.all(Array.from({ length: 2 * LIMIT }, (_, i) => limiters[i % 3]!.consume('tok_hot')));
  const admitted = decisions.filter((d) => d.allowed);
  expect(admitted.length).toBeLessThanOrEqual(LIMIT);
  expect(decisions.every((d) => d.shared)).toBe(true);
  // Under-admission: at most what the three instances held unused when the count ran out.
  expect(admitted.length).toBeGreaterThanOrEqual(LIMIT - 3 * 25);
  expect(await database.ref('hotLeases').get().then((s) => s.exists())).toBe(true);
  await Promise.all(limiters.map((l) => l.close()));
}, 60_000);
