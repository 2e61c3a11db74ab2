import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { connect, startFirelimit, textOf } from '../support/gateway-harness';
import { GOOD_SECRET } from '../support/mcp-test-app';
import { formatReservationId } from '../../src/gateway/reservation-id';
import { toolQuotaKey } from '../../src/gateway/upstream-quota-gate';
import { startUpstreamStub } from '../support/upstream-mcp-server';

/**
 * A tool's own upstream quota (the limits file's `upstream.tools`) beside the
 * shared UPSTREAM_RATE, and a held call whose caller leaves, over HTTP
 * against a real SDK 2.x upstream.
 */

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

function limitsDir(upstream: unknown): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'firelimit-tool-quotas-'));
  writeFileSync(path.join(dir, 'limits.json'), JSON.stringify({ upstream }));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

describe("a tool's own upstream quota (LIMITS_FILE upstream.tools)", () => {
  it('holds slow to one call a minute while echo still runs on the shared 2/s, and runs slow when its caller comes back at the slot', async () => {
    let nowMs = T0;
    const files = limitsDir({ tools: { slow: { rate: '1/min', headroom: 1 } } });
    const upstream = await startUpstreamStub();
    const firelimit = await startFirelimit(
      { UPSTREAM_MCP_URL: upstream.url, UPSTREAM_RATE: '2/s', UPSTREAM_HEADROOM: '1', UPSTREAM_HOLD_MS: '0', UPSTREAM_GRACE_MS: '0', LIMITS_FILE: 'limits.json' },
      { clock: () => nowMs, cwd: files.dir },
    );
    const client = await connect(firelimit.url);
    try {
      expect((await client.callTool({ name: 'slow', arguments: { waitMs: 0 } })).isError).toBeFalsy();
      nowMs += 1000;
      const second = (await client.callTool({ name: 'slow', arguments: { waitMs: 0 } })) as CallToolResult;
      expect(second.isError).toBe(true);
      expect(second.structuredContent).toEqual({ status: 'reserved', quota: 'slow', slotAtMs: T0 + 60_000, retryAfterMs: 59_000, reservation: formatReservationId({ key: toolQuotaKey('slow'), slotAtMs: T0 + 60_000 }) });
      expect(textOf(second)).toContain('The slow tool is at its own upstream rate limit');
      // The shared quota counted one call, at T0: echo, a second later, runs at once.
      const echo = (await client.callTool({ name: 'echo', arguments: { text: 'meanwhile' } })) as CallToolResult;
      expect(echo.structuredContent).toEqual({ echoed: 'meanwhile' });
      nowMs = T0 + 60_000;
      expect((await client.callTool({ name: 'slow', arguments: { waitMs: 0 } })).isError).toBeFalsy();
      expect(upstream.calls().map((c) => c.tool)).toEqual(['slow', 'echo', 'slow']);
      const metrics = await firelimit.service.metrics.registry.metrics();
      expect(metrics).toMatch(/firelimit_upstream_quota_answers_total\{answer="reserved",quota="slow"\} 1/);
      expect(metrics).toMatch(/firelimit_upstream_quota_day_used\{quota="slow"\} 2/);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
      files.remove();
    }
  });

  it('a tool quota without UPSTREAM_RATE limits that tool alone', async () => {
    const nowMs = T0;
    const files = limitsDir({ tools: { echo: { rate: '1/h', headroom: 1, maxWait: '1m' } } });
    const upstream = await startUpstreamStub();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_HOLD_MS: '0', LIMITS_FILE: 'limits.json' }, { clock: () => nowMs, cwd: files.dir });
    const client = await connect(firelimit.url);
    try {
      await client.callTool({ name: 'echo', arguments: { text: 'one' } });
      const refused = (await client.callTool({ name: 'echo', arguments: { text: 'two' } })) as CallToolResult;
      expect(refused._meta?.['firelimit/upstreamQuota']).toMatchObject({ status: 'rejected', quota: 'echo', reason: 'max_wait' });
      expect(textOf(refused)).toContain("The echo tool's own upstream quota cannot take this call");
      for (let i = 0; i < 3; i++) expect((await client.callTool({ name: 'slow', arguments: { waitMs: 0 } })).isError).toBeFalsy();
      expect(upstream.calls().map((c) => c.tool)).toEqual(['echo', 'slow', 'slow', 'slow']);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
      files.remove();
    }
  });

  it('warns at boot of a quota for a tool the upstream does not list, and refuses one on firelimit\'s own tool', async () => {
    const upstream = await startUpstreamStub();
    const typo = limitsDir({ tools: { ecoh: { rate: '1/min' } } });
    const own = limitsDir({ tools: { whoami: { rate: '1/min' } } });
    try {
      const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, LIMITS_FILE: 'limits.json' }, { cwd: typo.dir });
      const warning = firelimit.logger.entries.find((entry) => entry.fields?.event === 'config.upstream_tool_quota_unlisted');
      expect(warning?.fields?.tools).toEqual(['ecoh']);
      await firelimit.stop();
      await expect(startFirelimit({ UPSTREAM_MCP_URL: upstream.url, LIMITS_FILE: 'limits.json' }, { cwd: own.dir })).rejects.toThrow(/upstream\.tools\.whoami: whoami is firelimit's own tool/);
    } finally {
      await upstream.close();
      typo.remove();
      own.remove();
    }
  });
});

describe('a held call whose caller disconnects', () => {
  it.each([
    ['2025-11-25', {}, false],
    ['2026-07-28', { 'MCP-Method': 'tools/call', 'MCP-Name': 'echo' }, false],
    ['2025-11-25', {}, true],
    ['2026-07-28', { 'MCP-Method': 'tools/call', 'MCP-Name': 'echo' }, true],
  ])('in %s (headers %j; progress token: %s), is not forwarded upstream when its slot comes', async (revision, extraHeaders, withProgress) => {
    // Real time: the hold is the service's own abortable sleep, which the disconnect must end.
    const upstream = await startUpstreamStub();
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_RATE: '1/min', UPSTREAM_HEADROOM: '1', UPSTREAM_HOLD_MS: '60000', UPSTREAM_GRACE_MS: '0' });
    const call = (id: number, signal?: AbortSignal) =>
      fetch(firelimit.url, {
        method: 'POST',
        signal,
        headers: { Authorization: `Bearer ${GOOD_SECRET}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': revision, ...extraHeaders },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: {
            name: 'echo',
            arguments: { text: `call ${id}` },
            ...(revision === '2026-07-28' || withProgress
              ? {
                  _meta: {
                    ...(revision === '2026-07-28' ? { 'io.modelcontextprotocol/protocolVersion': revision, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} } : {}),
                    ...(withProgress ? { progressToken: `p${id}` } : {}),
                  },
                }
              : {}),
          },
        }),
      });
    try {
      const first = await call(1);
      expect(first.status).toBe(200);
      await first.text();
      const controller = new AbortController();
      const held = call(2, controller.signal).catch((error: Error) => error);
      // Held for about a minute: wait until the gate has it, then leave.
      const metrics = () => firelimit.service.metrics.registry.metrics();
      for (let i = 0; i < 200 && upstream.calls().length === 1 && !/firelimit_upstream_quota_answers_total\{answer="cancelled"/.test(await metrics()); i++) {
        if (i === 10) controller.abort();
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(await held).toMatchObject({ name: 'AbortError' });
      expect(await metrics()).toMatch(/firelimit_upstream_quota_answers_total\{answer="cancelled",quota="all"\} 1/);
      expect(upstream.calls().map((c) => c.args)).toEqual([{ text: 'call 1' }]);
    } finally {
      await firelimit.stop();
      await upstream.close();
    }
  });
});
