import { getDatabase } from 'firebase-admin/database';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimitPolicy } from '../../src/library/window/policy';
import { startRedisServer } from '../support/redis-server';
import { startRtdbTestServer } from '../support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';

/**
 * whenReady lets a service connect before it takes traffic, so its first
 * requests do not open an outage (a whole probe interval of local or refused
 * answers) merely because a client was still connecting.
 */
const policy: RateLimitPolicy = { name: 'default', limit: 10, windowMs: 60_000 };
const WAIT_MS = 3_000;
const UNREACHABLE_WAIT_MS = 300;

test('the memory backend is ready at once', async () => {
  const limiter = await createRateLimiter({ policy });
  await expect(limiter.whenReady(0)).resolves.toBe(true);
  await limiter.close();
});

test('an rtdb limiter is ready once its client has connected, and its first decision is shared', async () => {
  const server = await startRtdbTestServer();
  const app = createAdminApp(server);
  const limiter = await createRateLimiter({ store: new RtdbWindowStore({ database: getDatabase(app), rootPath: 'rateLimits' }), policy });
  try {
    await expect(limiter.whenReady(WAIT_MS)).resolves.toBe(true);
    await expect(limiter.consume('tok_ready')).resolves.toMatchObject({ shared: true, reason: 'within_limit' });
  } finally {
    await limiter.close();
    await deleteAdminApp(app);
    await server.close();
  }
});

test('an rtdb limiter whose server is frozen reports not ready after the wait, without throwing', async () => {
  const server = await startRtdbTestServer();
  await server.suspend();
  const app = createAdminApp(server);
  const limiter = await createRateLimiter({ store: new RtdbWindowStore({ database: getDatabase(app), rootPath: 'rateLimits' }), policy });
  try {
    const startedAt = Date.now();
    await expect(limiter.whenReady(UNREACHABLE_WAIT_MS)).resolves.toBe(false);
    expect(Date.now() - startedAt).toBeLessThan(UNREACHABLE_WAIT_MS + 500);
  } finally {
    await limiter.close();
    await server.resume();
    await deleteAdminApp(app);
    await server.close();
  }
});

test('a redis limiter is ready once connected, and reports not ready when nothing listens', async () => {
  const redis = await startRedisServer();
  const limiter = await createRateLimiter({ store: new RedisWindowStore({ url: redis.url }), policy });
  try {
    await expect(limiter.whenReady(WAIT_MS)).resolves.toBe(true);
    await expect(limiter.consume('tok_ready')).resolves.toMatchObject({ shared: true, reason: 'within_limit' });
  } finally {
    await limiter.close();
  }
  await redis.stop();
  const unreachable = await createRateLimiter({ store: new RedisWindowStore({ url: redis.url }), policy });
  try {
    await expect(unreachable.whenReady(UNREACHABLE_WAIT_MS)).resolves.toBe(false);
  } finally {
    await unreachable.close();
    await redis.close();
  }
});
