import { resolveUpstreamPolicy } from '../../src/library/schedule/upstream-policy';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { createUpstreamQuotaStore } from '../../src/service/create-upstream-quota-store';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { SqliteWindowStore } from '../../src/library/backends/sqlite/sqlite-store';
import { NODE_SQLITE, reportSqliteSkipped, sqliteTestFile } from '../support/sqlite-runtime';

const POLICY = resolveUpstreamPolicy({ limit: 15, windowMs: 60_000 });
const NOW_MS = 1_700_000_000_123;

describe('createUpstreamQuotaStore', () => {
  test('on the memory backend: a cached memory quota that schedules', async () => {
    const quota = await createUpstreamQuotaStore(new MemoryWindowStore(), undefined);
    expect(quota.backend).toBe('memory');
    expect((await quota.schedule('upstream', NOW_MS, { tokenId: 'tok_a', tool: 'search' }, POLICY)).outcome).toEqual({ status: 'run', claimed: false });
    expect((await quota.schedule('upstream', NOW_MS, { tokenId: 'tok_b', tool: 'search' }, POLICY)).outcome).toEqual({ status: 'reserved', slotAtMs: NOW_MS + 4445, retryAfterMs: 4445 });
    await quota.close();
  });

  describe('on the redis backend', () => {
    let server: RedisServer;
    beforeAll(async () => {
      server = await startRedisServer();
    });
    afterAll(async () => {
      await server?.close();
    });
    test('the quota shares the limit store\'s connection and prefix', async () => {
      const limitStore = new RedisWindowStore({ url: server.url, keyPrefix: 'svc:' });
      try {
        expect(await limitStore.whenReady(10_000)).toBe(true);
        const quota = await createUpstreamQuotaStore(limitStore, undefined);
        expect(quota.backend).toBe('redis');
        expect((await quota.schedule('upstream', NOW_MS, { tokenId: 'tok_a', tool: 'search' }, POLICY)).outcome).toEqual({ status: 'run', claimed: false });
        const { createClient } = await import('redis');
        const client = createClient({ url: server.url });
        await client.connect();
        expect(await client.get('svc:upstream:upstream')).toBe(`${NOW_MS + 4444}:60000:19675:1`);
        client.destroy();
      } finally {
        await limitStore.close();
      }
    });
  });

  reportSqliteSkipped('createUpstreamQuotaStore');
  (NODE_SQLITE === undefined ? describe.skip : describe)('on the sqlite backend', () => {
    test("the quota lives in the limit store's file, on its connection", async () => {
      const file = sqliteTestFile('quota');
      const limitStore = new SqliteWindowStore({ path: file.path, sweepIntervalMs: 0 });
      try {
        const quota = await createUpstreamQuotaStore(limitStore, undefined);
        expect(quota.backend).toBe('sqlite');
        expect((await quota.schedule('upstream', NOW_MS, { tokenId: 'tok_a', tool: 'search' }, POLICY)).outcome).toEqual({ status: 'run', claimed: false });
        expect(file.raw.prepare('SELECT value FROM firelimit_upstream WHERE namespace = ? AND key = ?').get('upstream', 'upstream')).toEqual(expect.objectContaining({ value: `${NOW_MS + 4444}:60000:19675:1` }));
      } finally {
        await limitStore.close();
        file.remove();
      }
    });
  });
});
