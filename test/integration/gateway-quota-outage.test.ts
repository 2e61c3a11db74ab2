import type { CallToolResult } from '@modelcontextprotocol/client';
import { connect, startFirelimit } from '../support/gateway-harness';
import { startRtdbTestServer, type RtdbTestServer } from '../support/rtdb-server';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * The shared upstream quota on RTDB when the database freezes (SIGSTOP on the
 * RTDB test server): a forwarded call must not hang on the quota's
 * transaction. Fail-open, as the limiter's own counters, it is scheduled on
 * the instance's own cursor and marked unshared (docs/adr/0040).
 */

const DEADLINE_MS = 400;

describe('the upstream quota when its database freezes', () => {
  let rtdb: RtdbTestServer;
  let upstream: UpstreamStub;

  beforeAll(async () => {
    rtdb = await startRtdbTestServer();
    upstream = await startUpstreamStub();
  });

  afterAll(async () => {
    await upstream.close();
    await rtdb.close();
  });

  /** RTDB with a short deadline; the upstream at 1/min, every call reserved (no hold), a 1 s grace. */
  const quotaEnv = (): NodeJS.ProcessEnv => ({
    RATE_LIMIT_BACKEND: 'rtdb',
    FIREBASE_DATABASE_URL: rtdb.databaseUrl,
    FIREBASE_DATABASE_EMULATOR_HOST: rtdb.host,
    RATE_LIMIT_TIMEOUT_MS: String(DEADLINE_MS),
    RATE_LIMIT_PROBE_INTERVAL_MS: '5000',
    UPSTREAM_MCP_URL: upstream.url,
    UPSTREAM_RATE: '1/min',
    UPSTREAM_HEADROOM: '1',
    UPSTREAM_HOLD_MS: '0',
    UPSTREAM_GRACE_MS: '1000',
    UPSTREAM_MAX_WAIT_MS: '600000',
  });

  it('fail-open: calls are still answered within the deadline, on a local cursor that starts from the shared one, and are counted as unshared', async () => {
    const firelimit = await startFirelimit(quotaEnv());
    const client = await connect(firelimit.url);
    try {
      // Healthy first: the shared cursor takes the call, and the next slot is a minute on.
      const sharedAtMs = Date.now();
      expect(((await client.callTool({ name: 'echo', arguments: { text: 'shared' } })) as CallToolResult).structuredContent).toEqual({ echoed: 'shared' });
      await rtdb.suspend();
      try {
        const startedAtMs = Date.now();
        const during = ((await client.callTool({ name: 'echo', arguments: { text: 'during' } })) as CallToolResult)._meta?.['firelimit/upstreamQuota'] as { slotAtMs: number };
        const elapsedMs = Date.now() - startedAtMs;
        // The limiter's own counters and the quota each wait at most one deadline, then decide locally.
        expect(elapsedMs).toBeLessThan(2 * DEADLINE_MS + 1500);
        // Locally, but from the shared cursor (ADR 0044): an empty local cursor ran this one at once.
        expect(during).toMatchObject({ status: 'reserved', quota: 'upstream' });
        expect(during.slotAtMs).toBeGreaterThanOrEqual(sharedAtMs + 60_000);
        expect(during.slotAtMs).toBeLessThanOrEqual(startedAtMs + 60_000);
        // The local cursor goes on spacing calls, and in an outage it answers at once.
        const quickStartMs = Date.now();
        const next = ((await client.callTool({ name: 'count', arguments: {} })) as CallToolResult)._meta?.['firelimit/upstreamQuota'];
        expect(next).toMatchObject({ status: 'reserved', quota: 'upstream', slotAtMs: during.slotAtMs + 61_000 });
        expect(Date.now() - quickStartMs).toBeLessThan(1000);
      } finally {
        await rtdb.resume();
      }
      expect(upstream.calls().map((c) => (c.args as { text: string }).text)).toEqual(['shared']);
      expect(await firelimit.service.metrics.registry.metrics()).toMatch(/firelimit_upstream_quota_unshared_total\{cause="(timeout|outage)"\} [1-9]/);
      // One guard per store: the limiter's counters and the quota on this database are one outage, one line.
      expect(firelimit.logger.entries.filter((entry) => entry.fields.event === 'ratelimit.outage_started')).toHaveLength(1);
    } finally {
      await client.close();
      await firelimit.stop();
    }
  }, 30_000);

  it('fail-open on two instances that count each other by heartbeat: each spaces its local slots on half the rate (ADR 0067)', async () => {
    const fleet = [await startFirelimit(quotaEnv()), await startFirelimit(quotaEnv())];
    for (const instance of fleet) await instance.service.limiter.fleet?.beat();
    const [first] = fleet as [(typeof fleet)[number]];
    const client = await connect(first.url);
    try {
      expect(first.service.limiter.fleet?.current()).toBe(2);
      await client.callTool({ name: 'echo', arguments: { text: 'shared' } });
      await rtdb.suspend();
      try {
        const during = ((await client.callTool({ name: 'echo', arguments: { text: 'during' } })) as CallToolResult)._meta?.['firelimit/upstreamQuota'] as { slotAtMs: number };
        const next = ((await client.callTool({ name: 'count', arguments: {} })) as CallToolResult)._meta?.['firelimit/upstreamQuota'];
        // One instance alone spaces them 60 s + the grace; each of two, 120 s + the grace.
        expect(next).toMatchObject({ status: 'reserved', quota: 'upstream', slotAtMs: during.slotAtMs + 121_000 });
      } finally {
        await rtdb.resume();
      }
    } finally {
      await client.close();
      await Promise.all(fleet.map((instance) => instance.stop()));
    }
  }, 30_000);
});
