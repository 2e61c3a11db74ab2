import type { App } from 'firebase-admin/app';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { getDatabase } from 'firebase-admin/database';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { ADMISSION_DEADLINE_MS, ADMISSION_POLICY, ADMISSION_PROBE_INTERVAL_MS, type AdmissionBackend } from './outage-admission';
import { startRedisServer } from './redis-server';
import { startRtdbTestServer } from './rtdb-server';
import { createAdminApp, deleteAdminApp } from './rtdb-server/admin-app';

const common = { policy: ADMISSION_POLICY, timeoutMs: ADMISSION_DEADLINE_MS, probeIntervalMs: ADMISSION_PROBE_INTERVAL_MS } as const;

/** A real redis-server; each instance gets its own client. */
export async function redisAdmissionBackend(): Promise<AdmissionBackend & { close(): Promise<void> }> {
  const server = await startRedisServer();
  return {
    name: 'redis',
    async instances(count, clock, outageShare) {
      const limiters: RateLimiter[] = [];
      for (let i = 0; i < count; i++) {
        const limiter = await createRateLimiter({ ...common, clock, outageShare, store: new RedisWindowStore({ url: server.url, commandTimeoutMs: ADMISSION_DEADLINE_MS }) });
        await limiter.whenReady(5_000);
        limiters.push(limiter);
      }
      return limiters;
    },
    freeze: async () => server.suspend(),
    thaw: async () => server.resume(),
    restartEmpty: () => server.restart(),
    close: () => server.close(),
  };
}

/** The RTDB test server; each instance gets its own firebase-admin app (own connection, own listener cache). */
export async function rtdbAdmissionBackend(): Promise<AdmissionBackend & { close(): Promise<void> }> {
  const server = await startRtdbTestServer();
  const apps: App[] = [];
  return {
    name: 'rtdb',
    async instances(count, clock, outageShare) {
      const limiters: RateLimiter[] = [];
      for (let i = 0; i < count; i++) {
        const app = createAdminApp(server);
        apps.push(app);
        const limiter = await createRateLimiter({ ...common, clock, outageShare, store: new RtdbWindowStore({ database: getDatabase(app), rootPath: 'rateLimits', clock }) });
        await limiter.whenReady(5_000);
        limiters.push(limiter);
      }
      return limiters;
    },
    freeze: () => server.suspend(),
    thaw: () => server.resume(),
    restartEmpty: () => server.restart(),
    async close() {
      await Promise.all(apps.splice(0).map((a) => deleteAdminApp(a)));
      await server.close();
    },
  };
}
