import type { CallToolResult } from '@modelcontextprotocol/client';
import { connect, startFirelimit, textOf, type RunningFirelimit } from '../support/gateway-harness';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * Issue 17 item 9: the reservation's words are obeyed as written. With
 * UPSTREAM_GRACE_MS=200, "call again in 1 s" (rounded up from 556 ms) landed
 * 444 ms late and the slot lapsed: 4 of 5 obeying clients lapsed. Each of 5
 * parallel callers here waits exactly what its text says, echoes nothing,
 * and runs.
 */

describe('a caller that obeys the reservation text arrives within a 200 ms grace', () => {
  let upstream: UpstreamStub;
  let firelimit: RunningFirelimit;

  beforeAll(async () => {
    upstream = await startUpstreamStub();
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_RATE: '2/s', UPSTREAM_GRACE_MS: '200', UPSTREAM_HOLD_MS: '0' });
  });

  afterAll(async () => {
    await firelimit?.stop();
    await upstream?.close();
  });

  it('5 parallel calls: 1 runs, 4 are reserved, and each runs when it waits the text\'s figure', async () => {
    const client = await connect(firelimit.url);
    try {
      const waits: string[] = [];
      const results = await Promise.all(
        Array.from({ length: 5 }, async (_, i) => {
          const call = () => client.callTool({ name: 'echo', arguments: { text: `obey-${i}` } }) as Promise<CallToolResult>;
          const first = await call();
          if (first.isError !== true) return first;
          const words = /call echo again in (\d+) (s|ms)/.exec(textOf(first));
          expect(words).not.toBeNull();
          const [, figure, unit] = words as RegExpExecArray;
          waits.push(`${figure} ${unit}`);
          await new Promise((resolve) => setTimeout(resolve, Number(figure) * (unit === 's' ? 1000 : 1)));
          return call();
        }),
      );
      expect(waits).toHaveLength(4);
      expect(results.map((r) => r.isError === true)).toEqual([false, false, false, false, false]);
      expect(upstream.calls().filter((c) => (c.args as { text?: string }).text?.startsWith('obey-'))).toHaveLength(5);
    } finally {
      await client.close();
    }
  }, 30_000);
});
