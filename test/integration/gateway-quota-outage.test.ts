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

  it('fail-open: calls still run within the deadline, spaced by the local cursor, and are counted as unshared', async () => {
    const firelimit = await startFirelimit({
      RATE_LIMIT_BACKEND: 'rtdb',
      FIREBASE_DATABASE_URL: rtdb.databaseUrl,
      FIREBASE_DATABASE_EMULATOR_HOST: rtdb.host,
      RATE_LIMIT_TIMEOUT_MS: String(DEADLINE_MS),
      RATE_LIMIT_PROBE_INTERVAL_MS: '5000',
      UPSTREAM_MCP_URL: upstream.url,
      UPSTREAM_RATE: '1/min',
      UPSTREAM_HEADROOM: '1',
      UPSTREAM_HOLD_MS: '0',
    });
    const client = await connect(firelimit.url);
    try {
      // Healthy first: the shared cursor takes the call.
      expect(((await client.callTool({ name: 'echo', arguments: { text: 'shared' } })) as CallToolResult).structuredContent).toEqual({ echoed: 'shared' });
      await rtdb.suspend();
      try {
        const startedAtMs = Date.now();
        const during = (await client.callTool({ name: 'echo', arguments: { text: 'during' } })) as CallToolResult;
        const elapsedMs = Date.now() - startedAtMs;
        // The limiter's own counters and the quota each wait at most one deadline, then decide locally.
        expect(elapsedMs).toBeLessThan(2 * DEADLINE_MS + 1500);
        expect(during.structuredContent).toEqual({ echoed: 'during' });
        // The local cursor still spaces calls: the next is given a slot, not run, and is answered at once.
        const quickStartMs = Date.now();
        const next = (await client.callTool({ name: 'echo', arguments: { text: 'next' } })) as CallToolResult;
        expect(next.structuredContent).toMatchObject({ status: 'reserved', quota: 'upstream' });
        expect(Date.now() - quickStartMs).toBeLessThan(1000);
      } finally {
        await rtdb.resume();
      }
      expect(upstream.calls().map((c) => (c.args as { text: string }).text)).toEqual(['shared', 'during']);
      expect(await firelimit.service.metrics.registry.metrics()).toMatch(/firelimit_upstream_quota_unshared_total\{cause="(timeout|outage)"\} [1-9]/);
      expect(firelimit.logger.entries.some((entry) => JSON.stringify(entry).includes('upstream-quota'))).toBe(true);
    } finally {
      await client.close();
      await firelimit.stop();
    }
  }, 30_000);
});
