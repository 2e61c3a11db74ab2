import type { CallToolResult } from '@modelcontextprotocol/client';
import { formatReservationId } from '../../src/gateway/reservation-id';
import { connect, startFirelimit, type RunningFirelimit } from '../support/gateway-harness';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * A client that lies in `_meta["firelimit/reservation"]` (docs/adr/0053): an
 * id for a slot it was never given, one for an earlier slot, junk of every
 * type. None runs a call early, none errors; each is a call that echoes
 * nothing. The clock is injected, so nothing waits.
 */

const T0 = Date.UTC(2026, 11, 1, 12);

describe('forged reservation ids through the gateway', () => {
  let upstream: UpstreamStub;
  let firelimit: RunningFirelimit;
  let nowMs = T0;

  beforeAll(async () => {
    upstream = await startUpstreamStub();
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_RATE: '2/s', UPSTREAM_HEADROOM: '1', UPSTREAM_HOLD_MS: '0' }, { clock: () => nowMs });
  });

  afterAll(async () => {
    await firelimit?.stop();
    await upstream?.close();
  });

  it('never runs a call before a slot of its token has come, whatever it echoes', async () => {
    const client = await connect(firelimit.url);
    const call = (reservation: unknown) => client.callTool({ name: 'echo', arguments: { text: 'x' }, _meta: { 'firelimit/reservation': reservation } }) as Promise<CallToolResult>;
    try {
      expect((await call(undefined)).isError).toBeFalsy();
      const reserved = (await call(undefined))._meta?.['firelimit/upstreamQuota'] as { slotAtMs: number; reservation: string };
      expect(reserved.slotAtMs).toBe(T0 + 500);
      const before = upstream.calls().length;
      // Before the slot: an id naming "now", an id for a past slot, and junk of every type each run nothing.
      nowMs = T0 + 100;
      for (const forged of [formatReservationId({ key: 'upstream', slotAtMs: T0 + 100 }), formatReservationId({ key: 'upstream', slotAtMs: T0 }), { slotAtMs: T0 }, 42, ['r1.x'], 'r1.' + 'A'.repeat(5000), null]) {
        const answer = await call(forged);
        expect({ forged, isError: answer.isError, status: (answer._meta?.['firelimit/upstreamQuota'] as { status?: string } | undefined)?.status }).toMatchObject({ forged, isError: true });
      }
      expect(upstream.calls().length).toBe(before);
      // At the slot, the real id runs.
      nowMs = reserved.slotAtMs;
      expect((await call(reserved.reservation)).isError).toBeFalsy();
      expect(upstream.calls().length).toBe(before + 1);
    } finally {
      await client.close();
    }
  });
});
