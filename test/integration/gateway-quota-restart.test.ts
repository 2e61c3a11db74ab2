import type { CallToolResult } from '@modelcontextprotocol/client';
import { connect, startFirelimit, type RunningFirelimit } from '../support/gateway-harness';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { startRtdbTestServer, type RtdbTestServer } from '../support/rtdb-server';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * The shared upstream quota when its database restarts empty (redis-server
 * without persistence, as a Memorystore basic-tier failover; the RTDB test
 * server keeps nothing across restart()). The cursor and the reservations
 * were only in the database; without the instance's own last view, the
 * first call after the restart ran at once, inside the interval, and every
 * outstanding reservation was forgotten (docs/adr/0041).
 */

interface Backend {
  readonly name: 'redis' | 'rtdb';
  start(): Promise<{ env: NodeJS.ProcessEnv; restart(): Promise<void>; close(): Promise<void> }>;
}

const BACKENDS: readonly Backend[] = [
  {
    name: 'redis',
    async start() {
      const redis: RedisServer = await startRedisServer();
      return { env: { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: redis.url }, restart: () => redis.restart(), close: () => redis.close() };
    },
  },
  {
    name: 'rtdb',
    async start() {
      const rtdb: RtdbTestServer = await startRtdbTestServer();
      return {
        env: { RATE_LIMIT_BACKEND: 'rtdb', FIREBASE_DATABASE_URL: rtdb.databaseUrl, FIREBASE_DATABASE_EMULATOR_HOST: rtdb.host },
        restart: () => rtdb.restart(),
        close: () => rtdb.close(),
      };
    },
  },
];

/** A quota answer's figures (in _meta: echo has an outputSchema), else the tool's own structured result. */
const structured = (result: unknown): Record<string, unknown> => ((result as CallToolResult)._meta?.['firelimit/upstreamQuota'] ?? (result as CallToolResult).structuredContent ?? {}) as Record<string, unknown>;

describe.each(BACKENDS)('the upstream quota when $name restarts empty', (backend) => {
  let database: Awaited<ReturnType<Backend['start']>>;
  let upstream: UpstreamStub;
  let firelimit: RunningFirelimit;

  beforeAll(async () => {
    [database, upstream] = await Promise.all([backend.start(), startUpstreamStub()]);
    firelimit = await startFirelimit({
      ...database.env,
      // Long enough for the database to come back; the fallback, if it is used, is seeded the same way.
      RATE_LIMIT_TIMEOUT_MS: '1500',
      RATE_LIMIT_PROBE_INTERVAL_MS: '200',
      UPSTREAM_MCP_URL: upstream.url,
      UPSTREAM_RATE: '1/min',
      UPSTREAM_HEADROOM: '1',
      UPSTREAM_HOLD_MS: '0',
      UPSTREAM_MAX_WAIT_MS: '600000',
    });
  });

  afterAll(async () => {
    await firelimit?.stop();
    await Promise.all([upstream?.close(), database?.close()]);
  });

  it('keeps the cursor and the reservations it saw: the next call waits its turn, a reserved caller keeps its slot', async () => {
    const client = await connect(firelimit.url);
    try {
      expect(structured(await client.callTool({ name: 'echo', arguments: { text: 'before' } }))).toEqual({ echoed: 'before' });
      const reserved = structured(await client.callTool({ name: 'count', arguments: {} }));
      expect(reserved).toMatchObject({ status: 'reserved', quota: 'upstream' });

      await database.restart();

      // Whatever the store answers first after the restart (or the local fallback, while it reconnects),
      // the call is not run inside the interval the cursor still owes.
      const after = structured(await client.callTool({ name: 'echo', arguments: { text: 'after' } }));
      expect(after).toMatchObject({ status: 'reserved', quota: 'upstream' });
      expect(after.slotAtMs as number).toBeGreaterThan(reserved.slotAtMs as number);
      // The caller reserved before the restart, echoing its reservation, is told the same slot, not a new one.
      const back = await client.callTool({ name: 'count', arguments: {}, _meta: { 'firelimit/reservation': reserved.reservation } });
      expect(structured(back)).toMatchObject({ status: 'reserved', slotAtMs: reserved.slotAtMs });
      expect(upstream.calls().map((c) => c.tool)).toEqual(['echo']);
    } finally {
      await client.close();
    }
  }, 60_000);
});
