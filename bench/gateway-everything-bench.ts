import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type autocannon from 'autocannon';
import { startEverythingUpstream, type EverythingUpstream } from '../test/support/everything-upstream';
import { interleavedRounds, loadWithCpu, type LoadResult } from './autocannon-rounds';
import { median, type BenchTable } from './bench-table';
import { serveAsBenchChild, serveOrRun, startBenchChild } from './bench-child';

/**
 * `npm run bench -- gateway-everything`: one forwarded `tools/call` of `echo` on the
 * real server-everything (its own process), against calling that upstream
 * directly with a session of its own. firelimit runs as `npm start` composes
 * it (real bearer auth on the file token store, the per-token limit on
 * memory, the JSON request log, no upstream quota: the bench times the
 * forwarding, not a schedule), in a child process; autocannon in this one.
 * Two gateway cells: every connection with the one token, and each of the
 * 10 connections with a token of its own (10 upstream sessions since
 * per-token sessions; one before). Rounds are interleaved and each ratio is
 * taken within a round.
 *
 * `npx tsx bench/gateway-everything-bench.ts` runs it alone.
 */

const ROUNDS = 5;
const ROUND_SECONDS = 5;
const WARMUP_SECONDS = 2;
const CONNECTIONS = 10;
const LIMIT = 1_000_000_000;

type CellName = 'direct' | 'gateway-1-token' | 'gateway-10-tokens';

// ---------------------------------------------------------------- server side

async function serve(upstreamUrl: string): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-gateway-bench-'));
  const { loadConfig } = await import('../src/config/config');
  const { buildService } = await import('../src/service/build-service');
  const { createServiceLogger } = await import('../src/logging/create-service-logger');
  const { TokenService } = await import('../src/tokens/token-service');
  const config = loadConfig({ RATE_LIMIT_PER_MINUTE: String(LIMIT), TOKENS_FILE: path.join(dir, 'tokens.json'), LOG_FORMAT: 'json', UPSTREAM_MCP_URL: upstreamUrl });
  const output = new Writable({ write: (_chunk, _encoding, done) => done() });
  const service = await buildService(config, { logger: createServiceLogger(config, { output }) });
  const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
  const secrets: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) secrets.push((await tokens.create({ name: `bench-${i}`, scopes: ['mcp'] })).secret);
  serveAsBenchChild(service.app, (server) => ({ port: (server.address() as AddressInfo).port, secrets }), async () => {
    await service.release();
    rmSync(dir, { recursive: true, force: true });
  });
}

// ---------------------------------------------------------------- load side

const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'bench' } } });
const BASE_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

/** A session on the upstream, as any client opens one: initialize, then notifications/initialized. */
async function openSession(url: string): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers: BASE_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } } }),
  });
  const sessionId = init.headers.get('mcp-session-id');
  await init.text();
  if (sessionId === null) throw new Error('server-everything opened no session');
  await fetch(url, { method: 'POST', headers: { ...BASE_HEADERS, 'mcp-session-id': sessionId }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) => r.text());
  return sessionId;
}

interface Cell {
  readonly name: CellName;
  readonly label: string;
  readonly url: string;
  /** Headers per connection (autocannon's setupClient), cycling through the list. */
  readonly headersPerConnection: readonly Record<string, string>[];
  readonly cpuUs: () => Promise<number>;
}

function load(cell: Cell, seconds: number): Promise<LoadResult> {
  let next = 0;
  const setupClient = (client: autocannon.Client): void => {
    const headers = cell.headersPerConnection[next++ % cell.headersPerConnection.length] ?? {};
    client.setHeaders({ ...BASE_HEADERS, ...headers });
  };
  return loadWithCpu(cell.cpuUs, { url: cell.url, method: 'POST', headers: BASE_HEADERS, body: CALL, connections: CONNECTIONS, duration: seconds, setupClient });
}

/** Before any load: the call is answered with the echo, or the bench would time errors. */
async function checkAnswer(cell: Cell): Promise<void> {
  const res = await fetch(cell.url, { method: 'POST', headers: { ...BASE_HEADERS, ...cell.headersPerConnection[0] }, body: CALL });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('Echo: bench')) throw new Error(`${cell.name} did not answer the echo: ${res.status} ${text.slice(0, 300)}`);
}

export async function runGatewayEverythingBench(): Promise<BenchTable> {
  let upstream: EverythingUpstream | undefined;
  let firelimit: Awaited<ReturnType<typeof startBenchChild<{ port: number; secrets: string[] }>>> | undefined;
  try {
    upstream = await startEverythingUpstream();
    firelimit = await startBenchChild<{ port: number; secrets: string[] }>(__filename, ['--serve', upstream.url], { name: 'firelimit gateway' });
    const sessionId = await openSession(upstream.url);
    const gatewayUrl = `http://127.0.0.1:${firelimit.ready.port}/mcp`;
    const secrets = firelimit.ready.secrets;
    const child = firelimit;
    // The upstream's CPU is not ours to read (its own process); the gateway's CPU per call is the child's.
    const noCpu = (): Promise<number> => Promise.resolve(0);
    const cells: Cell[] = [
      { name: 'direct', label: 'server-everything called directly (one session)', url: upstream.url, headersPerConnection: [{ 'mcp-session-id': sessionId }], cpuUs: noCpu },
      { name: 'gateway-1-token', label: 'firelimit gateway in front, one token on every connection', url: gatewayUrl, headersPerConnection: [{ authorization: `Bearer ${secrets[0]}` }], cpuUs: () => child.cpuUs() },
      {
        name: 'gateway-10-tokens',
        label: `firelimit gateway in front, a token per connection (${CONNECTIONS})`,
        url: gatewayUrl,
        headersPerConnection: secrets.map((secret) => ({ authorization: `Bearer ${secret}` })),
        cpuUs: () => child.cpuUs(),
      },
    ];
    for (const cell of cells) {
      await checkAnswer(cell);
      await load(cell, WARMUP_SECONDS);
    }
    const { rps, cpu, failures } = await interleavedRounds(cells, (c) => c.name, ROUNDS, (c) => load(c, ROUND_SECONDS));
    const vsDirect = (name: CellName): number => median((rps.get(name) ?? []).map((x, i) => x / (rps.get('direct')?.[i] ?? Number.NaN)));
    return {
      title: `Forwarded tools/call echo on server-everything (${CONNECTIONS} connections, ${ROUNDS} interleaved rounds x ${ROUND_SECONDS} s after a ${WARMUP_SECONDS} s warm-up)`,
      columns: ['variant', 'median req/s', 'min req/s', 'max req/s', 'x direct', 'gateway µs/call (CPU)'],
      rows: cells.map((c) => {
        const r = rps.get(c.name) ?? [];
        return [c.label, median(r), Math.min(...r), Math.max(...r), vsDirect(c.name), c.name === 'direct' ? '' : median(cpu.get(c.name) ?? [])];
      }),
      notes: [
        'x direct = median over rounds of req/s / the direct cell\'s req/s in the same round',
        'gateway µs/call = CPU of the firelimit process per forwarded call (the upstream runs in its own process, not counted)',
        `non-2xx responses or errors across all rounds: ${failures}`,
        `node ${process.version}, ${os.cpus()[0]?.model.trim() ?? 'unknown cpu'}, ${os.availableParallelism()} cores shared by the upstream, the gateway, autocannon and whatever else runs`,
      ],
    };
  } finally {
    await firelimit?.stop();
    await upstream?.close();
  }
}

if (require.main === module) serveOrRun(serve, runGatewayEverythingBench);
