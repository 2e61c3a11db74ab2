import type { CallToolResult } from '@modelcontextprotocol/client';
import { connect, startFirelimit, textOf, type RunningFirelimit } from '../support/gateway-harness';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * Issue 17 item 9: the reservation's words are obeyed as written. With
 * UPSTREAM_GRACE_MS=200, "call again in 1 s" (rounded up from 556 ms) landed
 * 444 ms late and the slot lapsed: 4 of 5 obeying clients lapsed. Each of 5
 * parallel callers here comes back exactly when its text says (on an
 * injected clock), echoes nothing, and runs.
 */

describe('a caller that obeys the reservation text arrives within a 200 ms grace', () => {
  let upstream: UpstreamStub;
  let firelimit: RunningFirelimit;
  // Injected time: each caller comes back exactly when its text says, however loaded the machine is.
  const T0 = Date.UTC(2026, 0, 1, 12, 0, 0, 100);
  let nowMs = T0;

  beforeAll(async () => {
    upstream = await startUpstreamStub();
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_RATE: '2/s', UPSTREAM_GRACE_MS: '200', UPSTREAM_HOLD_MS: '0' }, { clock: () => nowMs });
  });

  afterAll(async () => {
    await firelimit?.stop();
    await upstream?.close();
  });

  it('5 parallel calls: 1 runs, 4 are reserved, and each runs when it waits the text\'s figure', async () => {
    const client = await connect(firelimit.url);
    try {
      const call = (i: number) => client.callTool({ name: 'echo', arguments: { text: `obey-${i}` } }) as Promise<CallToolResult>;
      const firsts = await Promise.all(Array.from({ length: 5 }, (_, i) => call(i)));
      expect(firsts.filter((r) => r.isError !== true)).toHaveLength(1);
      const waits = firsts.flatMap((first, i) => {
        if (first.isError !== true) return [];
        const words = /call echo again in (\d+) (s|ms)/.exec(textOf(first));
        expect(words).not.toBeNull();
        const [, figure, unit] = words as RegExpExecArray;
        return [{ i, waitMs: Number(figure) * (unit === 's' ? 1000 : 1) }];
      });
      expect(waits).toHaveLength(4);
      const again: CallToolResult[] = [];
      for (const { i, waitMs } of [...waits].sort((a, b) => a.waitMs - b.waitMs)) {
        nowMs = T0 + waitMs;
        again.push(await call(i));
      }
      expect(again.map((r) => r.isError === true)).toEqual([false, false, false, false]);
      expect(upstream.calls().filter((c) => (c.args as { text?: string }).text?.startsWith('obey-'))).toHaveLength(5);
    } finally {
      await client.close();
    }
  }, 30_000);
});
