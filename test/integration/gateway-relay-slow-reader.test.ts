import net from 'node:net';
import type { CallToolResult, Progress } from '@modelcontextprotocol/client';
import { DEFAULT_RELAY_BOUNDS, relayedUnreadBytes } from '../../src/mcp/related-stream';
import { UPSTREAM_MAX_ANSWER_BYTES } from '../../src/gateway/bounded-fetch';
import { startEverythingUpstream, startRecordingProxy, type EverythingUpstream, type RecordingProxy } from '../support/everything-upstream';
import { connect, eventually, startFirelimit, textOf, type RunningFirelimit } from '../support/gateway-harness';
import { GOOD_SECRET } from '../support/mcp-test-app';

/**
 * Issue 17 item 9 on real sockets (docs/adr/0051-gateway-degrade-and-bounds.md, "Relayed streams"): callers
 * that ask for a relayed progress stream of a forwarded tools/call whose upstream (the real server-everything)
 * reports progress every millisecond, and never read their sockets. Before the bound, such a caller grew the
 * instance by hundreds of MB for the whole UPSTREAM_TIMEOUT_MS. Now what the instance holds for them stays
 * within the stated bound, each is cut (the connection ends, without an answer) within the stated stall time
 * once its socket is full, and another caller is served as usual meanwhile.
 *
 * The slow reader is a raw loopback socket paused from the start: Linux grows a receive buffer only as its
 * application reads, so it stays at tcp_rmem's initial size. Its progressToken is 4 KiB, which the relay repeats
 * in every event, so the kernel's buffers fill within a second or two instead of a minute.
 */

jest.setTimeout(90_000);

const SLOW_READERS = 3;
const TOKEN = 'p'.repeat(4096);
/** One relayed progress event carrying TOKEN, with room for its figures. */
const EVENT_BYTES = TOKEN.length + 200;
/** How late a cut may come past the stall time: the sampling interval and a loaded machine. */
const CUT_SLACK_MS = 3000;

interface SlowReader {
  /** Resumes reading: resolves with everything the socket got once it ends (or after `timeoutMs`, then `ended` is false). */
  drain(timeoutMs: number): Promise<{ readonly ended: boolean; readonly text: string }>;
  destroy(): void;
}

function slowReader(url: URL, revision: '2025-11-25' | '2026-07-28', id: number): SlowReader {
  const meta = {
    progressToken: TOKEN,
    ...(revision === '2026-07-28'
      ? { 'io.modelcontextprotocol/protocolVersion': revision, 'io.modelcontextprotocol/clientInfo': { name: 'slow', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} }
      : {}),
  };
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 40, steps: 40_000 }, _meta: meta } });
  const headers = [
    `POST ${url.pathname} HTTP/1.1`,
    `Host: ${url.host}`,
    `Authorization: Bearer ${GOOD_SECRET}`,
    'Content-Type: application/json',
    'Accept: application/json, text/event-stream',
    `MCP-Protocol-Version: ${revision}`,
    ...(revision === '2026-07-28' ? ['Mcp-Method: tools/call', 'Mcp-Name: trigger-long-running-operation'] : []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    '',
  ].join('\r\n');
  const socket = net.connect({ host: '127.0.0.1', port: Number(url.port) });
  socket.pause();
  socket.on('error', () => undefined);
  socket.write(headers + body);
  return {
    drain: (timeoutMs) =>
      new Promise((resolve) => {
        const chunks: Buffer[] = [];
        const done = (ended: boolean): void => {
          clearTimeout(timer);
          resolve({ ended, text: Buffer.concat(chunks).toString('latin1') });
        };
        const timer = setTimeout(() => done(false), timeoutMs);
        socket.on('data', (chunk: Buffer) => void chunks.push(chunk));
        socket.once('close', () => done(true));
        socket.resume();
      }),
    destroy: () => socket.destroy(),
  };
}

const cuts = (firelimit: RunningFirelimit) => firelimit.logger.entries.filter((e) => e.fields?.event === 'mcp.relay_cut');

describe('callers that never read their relayed progress stream', () => {
  let upstream: EverythingUpstream;
  let proxy: RecordingProxy;

  beforeAll(async () => {
    upstream = await startEverythingUpstream();
    proxy = await startRecordingProxy(upstream.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await upstream?.close();
  });

  it.each([
    // 2025 era (RelatedStream): past the backpressure mark a progress report replaces the waiting one, so a stream holds one mark and one event.
    ['2025-11-25', DEFAULT_RELAY_BOUNDS.backpressureBytes + EVENT_BYTES] as const,
    // 2026 era (pipeBoundedStream): the SDK's own chunks, nothing to coalesce: a stream may hold the call bound and the answer cap.
    ['2026-07-28', DEFAULT_RELAY_BOUNDS.callBytes + UPSTREAM_MAX_ANSWER_BYTES] as const,
  ])(
    'in %s: the instance holds at most the stated bound for them (%d bytes each, the instance cap in all), each is cut within the stall time and cancelled upstream, and another caller is served meanwhile',
    async (revision, perCallBytes) => {
      // The upstream's operation outlives the stall time, so what ends each stream is the cut, not the call or its timeout.
      proxy.clear();
      const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_TIMEOUT_MS: '60000' });
      const readers: SlowReader[] = [];
      let maxUnread = 0;
      let fullAtMs: number | undefined;
      const sampler = setInterval(() => {
        const unread = relayedUnreadBytes();
        maxUnread = Math.max(maxUnread, unread);
        if (fullAtMs === undefined && unread >= DEFAULT_RELAY_BOUNDS.backpressureBytes) fullAtMs = Date.now();
      }, 10);
      const other = await connect(firelimit.url, revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : undefined);
      try {
        const startedAtMs = Date.now();
        for (let i = 0; i < SLOW_READERS; i++) readers.push(slowReader(firelimit.url, revision, 100 + i));
        // Their sockets are full: the relay holds bytes the kernel would not take.
        await eventually('the slow readers fill their sockets', () => fullAtMs !== undefined, 20_000);

        // Another caller meanwhile: a plain call and a relayed stream of its own, both answered in full and promptly.
        const echoStartedMs = Date.now();
        const echo = (await other.callTool({ name: 'echo', arguments: { message: 'still here' } })) as CallToolResult;
        expect(textOf(echo)).toContain('still here');
        expect(Date.now() - echoStartedMs).toBeLessThan(2000);
        const progress: Progress[] = [];
        const streamed = (await other.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.5, steps: 5 } }, { onprogress: (p) => void progress.push(p) })) as CallToolResult;
        expect(textOf(streamed)).toMatch(/completed/);
        expect(progress.map((p) => p.progress)).toEqual([1, 2, 3, 4, 5]);

        await eventually('every slow reader is cut', () => cuts(firelimit).length >= SLOW_READERS, DEFAULT_RELAY_BOUNDS.stallMs + CUT_SLACK_MS + 5000);
        const cutAtMs = Date.now();
        // Within the stall time of its socket filling (the first filled socket's time is the earliest any stall began).
        expect(cutAtMs - (fullAtMs ?? startedAtMs)).toBeLessThanOrEqual(DEFAULT_RELAY_BOUNDS.stallMs + CUT_SLACK_MS);
        expect(cuts(firelimit).every((e) => e.severity === 'WARNING' && typeof e.fields?.why === 'string')).toBe(true);
        // The cut cancels each call upstream too: the operation does not run on for nobody.
        const slowCallIds = new Set(proxy.of('tools/call').filter((m) => (m.params as { name?: string }).name === 'trigger-long-running-operation' && (m.params as { arguments?: { steps?: number } }).arguments?.steps === 40_000).map((m) => m.id));
        expect(slowCallIds.size).toBe(SLOW_READERS);
        await eventually('each cut call is cancelled upstream', () => proxy.of('notifications/cancelled').filter((m) => slowCallIds.has((m.params as { requestId?: string | number }).requestId as string | number)).length === SLOW_READERS, 5000);

        // A refusal, not a hang: read now, each socket ends, and what it got holds progress but never an answer.
        for (const reader of readers) {
          const { ended, text } = await reader.drain(5000);
          expect(ended).toBe(true);
          expect(text).toContain('notifications/progress');
          expect(text).not.toContain('"result"');
        }
        expect(maxUnread).toBeLessThanOrEqual(Math.min(SLOW_READERS * perCallBytes, DEFAULT_RELAY_BOUNDS.instanceBytes));
        // Everything held for them is given back once they are gone.
        await eventually('the relayed bytes are given back', () => relayedUnreadBytes() === 0, 5000);
      } finally {
        clearInterval(sampler);
        for (const reader of readers) reader.destroy();
        await other.close();
        await firelimit.stop();
      }
    },
  );
});
