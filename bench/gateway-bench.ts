import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type autocannon from 'autocannon';
import { Pool } from 'undici';
import { interleavedRounds, loadWithCpu, type LoadResult } from './autocannon-rounds';
import { median, percentile, type BenchTable } from './bench-table';
import { serveAsBenchChild, serveOrRun, startBenchChild, type BenchChild } from './bench-child';
import { createMinimalMcpUpstream } from './minimal-mcp-upstream';

/**
 * `npm run bench -- gateway` (issue 22): one forwarded `tools/call` to a
 * minimal upstream (./minimal-mcp-upstream: node:http, a fixed answer, its own
 * process), three ways in the same run: the upstream called directly, through
 * firelimit's gateway (as `npm start` composes it: bearer auth on the file
 * token store, the per-token limit on memory, the JSON request log, no
 * upstream quota; one token, and a token per connection: as many upstream
 * sessions), the same with the call sent by the SDK client over fetch (as
 * before ADR 0065), and through `@civic/passthrough-mcp-server` (its CLI, one
 * session), the one peer found that forwards MCP calls.
 * Throughput at 10 connections (autocannon, interleaved rounds); CPU per
 * forwarded call of the forwarding process, from the kernel's accounting
 * (getrusage for firelimit's child, /proc/PID/stat for the peer's); and the
 * p50 at one connection, sequential calls, less the direct p50 of the same
 * round: what the hop adds.
 *
 * `npx tsx bench/gateway-bench.ts` runs it alone; GATEWAY_BENCH_SECONDS and
 * GATEWAY_BENCH_ROUNDS shorten it, GATEWAY_BENCH_CPU_PROF=dir profiles the
 * firelimit child, GATEWAY_BENCH_BASELINE_SRC=DIR (another checkout's src,
 * e.g. a `git archive` of the parent commit) adds that build as a cell of its
 * own, one token, in the same rounds: an A/B of a change.
 */

const ROUNDS = Number(process.env.GATEWAY_BENCH_ROUNDS ?? 5);
const ROUND_SECONDS = Number(process.env.GATEWAY_BENCH_SECONDS ?? 5);
const WARMUP_SECONDS = 2;
const CONNECTIONS = 10;
/** Sequential calls per cell and round for the one-connection latency. */
const LATENCY_CALLS = 1000;
const LIMIT = 1_000_000_000;
const PROTOCOL_VERSION = '2025-11-25';

type CellName = 'direct' | 'firelimit' | 'firelimit-10-tokens' | 'firelimit-sdk' | 'firelimit-baseline' | 'peer';
const BASELINE_SRC = process.env.GATEWAY_BENCH_BASELINE_SRC;

// ---------------------------------------------------------------- server side

/**
 * `viaSdk`: the tools/call forwarded by the SDK client over fetch, as before the forwarder (an injected fetch turns it
 * off). `src`: the build's source folder, relative to this file (../src, or GATEWAY_BENCH_BASELINE_SRC).
 */
async function serveFirelimit(upstreamUrl: string, viaSdk: boolean, src = '../src'): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-gateway-bench-'));
  const { loadConfig } = (await import(`${src}/config/config`)) as typeof import('../src/config/config');
  const { buildService } = (await import(`${src}/service/build-service`)) as typeof import('../src/service/build-service');
  const { createServiceLogger } = (await import(`${src}/logging/create-service-logger`)) as typeof import('../src/logging/create-service-logger');
  const { TokenService } = (await import(`${src}/tokens/token-service`)) as typeof import('../src/tokens/token-service');
  const config = loadConfig({ RATE_LIMIT_PER_MINUTE: String(LIMIT), TOKENS_FILE: path.join(dir, 'tokens.json'), LOG_FORMAT: 'json', UPSTREAM_MCP_URL: upstreamUrl });
  // The real JSON log lines, built and written in batches as on stdout (npm start); only the bytes are thrown away.
  const output = new Writable({ write: (_chunk, _encoding, done) => done() });
  const logger = createServiceLogger(config, { output, batch: true });
  const service = await buildService(config, { logger, ...(viaSdk ? { upstreamFetch: (input, init) => fetch(input, init) } : {}) });
  const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
  const secrets: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) secrets.push((await tokens.create({ name: `bench-${i}`, scopes: ['mcp'] })).secret);
  // On the server the service puts its app on (Express's prototypes preset, ADR 0069), not app.listen's plain one.
  const { createServiceServer } = (await import(`${src}/service/express-server`)) as typeof import('../src/service/express-server');
  const served = { listen: (port: number, host: string, callback: () => void) => createServiceServer(service.app).listen(port, host, callback) };
  serveAsBenchChild(served, (server) => ({ port: (server.address() as AddressInfo).port, secret: secrets[0], secrets }), async () => {
    await service.release();
    rmSync(dir, { recursive: true, force: true });
  });
}

function serve(name: 'upstream' | 'firelimit' | 'firelimit-sdk' | 'firelimit-baseline'): Promise<void> {
  const upstreamUrl = process.argv[process.argv.indexOf('--serve') + 2] as string;
  if (name === 'firelimit-baseline') return serveFirelimit(upstreamUrl, false, BASELINE_SRC);
  if (name !== 'upstream') return serveFirelimit(upstreamUrl, name === 'firelimit-sdk');
  serveAsBenchChild(createMinimalMcpUpstream(), (server) => ({ port: (server.address() as AddressInfo).port }));
  return Promise.resolve();
}

// ---------------------------------------------------------------- the peer

interface Peer {
  readonly port: number;
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The peer's CPU so far (user + system, µs): utime and stime of /proc/PID/stat, in clock ticks of 10 ms. */
function procCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks * 10_000;
}

/** The peer's own CLI, as its README runs it, on the same node as this bench; its console output is discarded. */
async function startPeer(upstreamPort: number): Promise<Peer> {
  const port = await freePort();
  // Its entry runs only when argv[1] is its real path (node_modules may be a symlink).
  const cli = path.join(realpathSync(path.join(__dirname, '..', 'node_modules', '@civic', 'passthrough-mcp-server')), 'dist', 'cli.js');
  const child: ChildProcess = spawn(process.execPath, [cli], {
    env: { ...process.env, PORT: String(port), TARGET_SERVER_URL: `http://127.0.0.1:${upstreamPort}`, TARGET_SERVER_MCP_PATH: '/mcp' },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  // Its stderr is kept only to say why it died: under load it warns, many times a run, of the abort listeners its
  // transport's fetch leaves on one long-lived signal (MaxListenersExceededWarning), which would bury the table.
  let stderrTail = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderrTail = (stderrTail + chunk.toString()).slice(-2000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (let tries = 0; ; tries++) {
    if (child.exitCode !== null) throw new Error(`the peer exited (${child.exitCode}) before it listened: ${stderrTail}`);
    const listening = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'GET' }).then(() => true, () => false);
    if (listening) break;
    if (tries > 100) throw new Error('the peer did not listen within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const pid = child.pid as number;
  return {
    port,
    cpuUs: () => Promise.resolve(procCpuUs(pid)),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

// ---------------------------------------------------------------- load side

const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'bench' } } });
const BASE_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL_VERSION };

/** A session, as any client opens one: initialize, then notifications/initialized. */
async function openSession(url: string): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers: BASE_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } } }),
  });
  const sessionId = init.headers.get('mcp-session-id');
  await init.text();
  if (sessionId === null) throw new Error(`${url} opened no session`);
  await fetch(url, { method: 'POST', headers: { ...BASE_HEADERS, 'mcp-session-id': sessionId }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) => r.text());
  return sessionId;
}

interface Cell {
  readonly name: CellName;
  readonly label: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  /** Headers of each connection in turn (autocannon's setupClient), on top of `headers`; the latency rounds skip such a cell. */
  readonly perConnection?: readonly Record<string, string>[];
  readonly cpuUs: () => Promise<number>;
}

function load(cell: Cell, seconds: number): Promise<LoadResult> {
  const headers = { ...BASE_HEADERS, ...cell.headers };
  let next = 0;
  const perConnection = cell.perConnection;
  const setupClient = perConnection === undefined ? undefined : (client: autocannon.Client): void => void client.setHeaders({ ...headers, ...perConnection[next++ % perConnection.length] });
  const options: autocannon.Options = { url: cell.url, method: 'POST', headers, body: CALL, connections: CONNECTIONS, duration: seconds, ...(setupClient === undefined ? {} : { setupClient }) };
  return loadWithCpu(cell.cpuUs, options);
}

/** Before any load: the call is answered with the echo, or the bench would time errors. */
async function checkAnswer(cell: Cell): Promise<void> {
  const res = await fetch(cell.url, { method: 'POST', headers: { ...BASE_HEADERS, ...cell.headers, ...cell.perConnection?.[0] }, body: CALL });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('Echo: bench')) throw new Error(`${cell.name} did not answer the echo: ${res.status} ${text.slice(0, 300)}`);
}

/** The p50 (ms) of `calls` sequential calls on one keep-alive connection. */
async function p50AtOneConnection(cell: Cell, calls: number): Promise<number> {
  const url = new URL(cell.url);
  const pool = new Pool(url.origin, { connections: 1 });
  const headers = { ...BASE_HEADERS, ...cell.headers };
  const took: number[] = [];
  try {
    for (let i = 0; i < calls; i++) {
      const started = process.hrtime.bigint();
      const { statusCode, body } = await pool.request({ path: url.pathname, method: 'POST', headers, body: CALL });
      await body.text();
      took.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (statusCode !== 200) throw new Error(`${cell.name} answered ${statusCode}`);
    }
  } finally {
    await pool.close();
  }
  return percentile(took, 50);
}

export async function runGatewayBench(): Promise<BenchTable> {
  let upstream: BenchChild<{ port: number }> | undefined;
  let firelimit: BenchChild<{ port: number; secret: string; secrets: string[] }> | undefined;
  let firelimitSdk: BenchChild<{ port: number; secret: string; secrets: string[] }> | undefined;
  let baseline: BenchChild<{ port: number; secret: string; secrets: string[] }> | undefined;
  let peer: Peer | undefined;
  try {
    upstream = await startBenchChild<{ port: number }>(__filename, ['--serve', 'upstream'], { name: 'minimal upstream' });
    const upstreamUrl = `http://127.0.0.1:${upstream.ready.port}/mcp`;
    // GATEWAY_BENCH_CPU_PROF=dir: firelimit's child writes a CPU profile there when it stops.
    const profileDir = process.env.GATEWAY_BENCH_CPU_PROF;
    const execArgv = profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir];
    firelimit = await startBenchChild<{ port: number; secret: string; secrets: string[] }>(__filename, ['--serve', 'firelimit', upstreamUrl], { name: 'firelimit gateway', loader: 'typescript', execArgv });
    firelimitSdk = await startBenchChild<{ port: number; secret: string; secrets: string[] }>(__filename, ['--serve', 'firelimit-sdk', upstreamUrl], { name: 'firelimit gateway (SDK client)', loader: 'typescript' });
    if (BASELINE_SRC !== undefined) {
      baseline = await startBenchChild<{ port: number; secret: string; secrets: string[] }>(__filename, ['--serve', 'firelimit-baseline', upstreamUrl], { name: 'firelimit gateway (baseline)', loader: 'typescript' });
    }
    peer = await startPeer(upstream.ready.port);
    const peerUrl = `http://127.0.0.1:${peer.port}/mcp`;
    const [directSession, peerSession] = await Promise.all([openSession(upstreamUrl), openSession(peerUrl)]);
    const [up, fl, fs, pe] = [upstream, firelimit, firelimitSdk, peer];
    const cells: Cell[] = [
      { name: 'direct', label: 'minimal upstream called directly (one session)', url: upstreamUrl, headers: { 'mcp-session-id': directSession }, cpuUs: () => up.cpuUs() },
      { name: 'firelimit', label: 'firelimit gateway in front (one token)', url: `http://127.0.0.1:${firelimit.ready.port}/mcp`, headers: { authorization: `Bearer ${firelimit.ready.secret}` }, cpuUs: () => fl.cpuUs() },
      {
        name: 'firelimit-10-tokens',
        label: `firelimit gateway in front, a token per connection (${CONNECTIONS} upstream sessions)`,
        url: `http://127.0.0.1:${firelimit.ready.port}/mcp`,
        headers: {},
        perConnection: firelimit.ready.secrets.map((secret) => ({ authorization: `Bearer ${secret}` })),
        cpuUs: () => fl.cpuUs(),
      },
      { name: 'firelimit-sdk', label: 'firelimit, tools/call through the SDK client and fetch (before)', url: `http://127.0.0.1:${firelimitSdk.ready.port}/mcp`, headers: { authorization: `Bearer ${firelimitSdk.ready.secret}` }, cpuUs: () => fs.cpuUs() },
      { name: 'peer', label: '@civic/passthrough-mcp-server in front (one session)', url: peerUrl, headers: { 'mcp-session-id': peerSession }, cpuUs: () => pe.cpuUs() },
    ];
    const base = baseline;
    if (base !== undefined) {
      const url = `http://127.0.0.1:${base.ready.port}/mcp`;
      cells.splice(2, 0, { name: 'firelimit-baseline', label: `firelimit as built from ${BASELINE_SRC} (one token)`, url, headers: { authorization: `Bearer ${base.ready.secret}` }, cpuUs: () => base.cpuUs() });
    }
    for (const cell of cells) {
      await checkAnswer(cell);
      await load(cell, WARMUP_SECONDS);
      if (cell.perConnection === undefined) await p50AtOneConnection(cell, LATENCY_CALLS / 5);
    }
    const { rps, cpu, failures } = await interleavedRounds(cells, (c) => c.name, ROUNDS, (c) => load(c, ROUND_SECONDS));
    const p50 = new Map<CellName, number[]>(cells.map((c) => [c.name, []]));
    const oneConnection = cells.filter((c) => c.perConnection === undefined);
    for (let round = 0; round < ROUNDS; round++) {
      for (let j = 0; j < oneConnection.length; j++) {
        const cell = oneConnection[(round + j) % oneConnection.length] as Cell;
        p50.get(cell.name)?.push(await p50AtOneConnection(cell, LATENCY_CALLS));
      }
    }
    const ratio = (samples: ReadonlyMap<CellName, number[]>, name: CellName, to: CellName): number => median((samples.get(name) ?? []).map((x, i) => x / (samples.get(to)?.[i] ?? Number.NaN)));
    const added = (name: CellName): number => median((p50.get(name) ?? []).map((x, i) => x - (p50.get('direct')?.[i] ?? Number.NaN)));
    const rows = cells.map((c) => [
      c.label,
      median(rps.get(c.name) ?? []),
      c.name === 'direct' ? '' : ratio(rps, c.name, 'peer'),
      median(cpu.get(c.name) ?? []),
      c.name === 'direct' ? '' : ratio(cpu, c.name, 'peer'),
      c.perConnection === undefined ? median(p50.get(c.name) ?? []) : '',
      c.name === 'direct' || c.perConnection !== undefined ? '' : added(c.name),
    ]);
    const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
    return {
      title: `Forwarded tools/call echo to a minimal upstream (${CONNECTIONS} connections, ${ROUNDS} interleaved rounds x ${ROUND_SECONDS} s after a ${WARMUP_SECONDS} s warm-up; p50 at 1 connection, ${ROUNDS} x ${LATENCY_CALLS} calls)`,
      columns: ['variant', 'median req/s', 'x peer req/s', 'CPU µs/call', 'x peer CPU', 'p50 ms (1 conn)', 'added p50 ms'],
      rows,
      notes: [
        'x peer = median over rounds of the ratio to the peer in the same round; added p50 = p50 minus the direct p50 of the same round',
        'CPU µs/call = CPU (user + system, kernel accounting) of the process that answers the cell, per call: the upstream for direct, firelimit or the peer otherwise (the upstream behind them not counted)',
        `targets (issue 22): throughput ${verdict(ratio(rps, 'firelimit', 'peer') >= 1)} (>= 1.0x peer), CPU ${verdict(ratio(cpu, 'firelimit', 'peer') <= 1)} (<= 1.0x peer), added p50 ${verdict(added('firelimit') <= 0.5)} (<= 0.5 ms)`,
        `non-2xx responses or errors across all rounds: ${failures}`,
        `node ${process.version}, ${os.cpus()[0]?.model.trim() ?? 'unknown cpu'}, ${os.availableParallelism()} cores shared by the upstream, the forwarder, autocannon and whatever else runs`,
      ],
    };
  } finally {
    await peer?.stop();
    await firelimit?.stop();
    await firelimitSdk?.stop();
    await baseline?.stop();
    await upstream?.stop();
  }
}

if (require.main === module) serveOrRun(serve, runGatewayBench);
