import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { median, percentile, printTable, type BenchTable } from './bench-table';
import { serveAsBenchChild, startBenchChild, type BenchChild } from './bench-child';

/**
 * An integrator's latency for `tools/call` on the real app (memory backend,
 * file token store, the production auth middleware), alone and while 4
 * concurrent clients attack /mcp. Three processes: the server, the attackers
 * (one child, 4 concurrent keep-alive clients) and the integrator (this
 * one), so no side's work runs on another's event loop; they still share the
 * machine's cores, as an instance and its noisy neighbours do. Scenarios run
 * in interleaved rounds so drift on a shared machine hits each alike.
 *
 * `npm run bench -- attack`, or `npx tsx bench/attack-bench.ts` alone.
 * Loopback only; bounded in time (ROUNDS × scenarios × ROUND_MS) and count.
 */

const ROUNDS = 3;
const ROUND_MS = 2_000;
const WARMUP_MS = 1_000;
const ATTACKERS = 4;
/** The target: the integrator's median under the nested-JSON attack within this many times its baseline. */
const TARGET_RATIO = 3;
const ACCEPT = 'application/json, text/event-stream';
const BODY_BYTES = 1_000_000;

interface Attack {
  readonly name: string;
  readonly label: string;
  /** Whether the attackers hold a valid token of their own (not the integrator's). */
  readonly authenticated: boolean;
  readonly body: Buffer;
}

const nestedArrays = (bytes: number): Buffer => Buffer.from('['.repeat(bytes / 2) + ']'.repeat(bytes / 2));

/** One valid, shallow message carrying a 1 MB string: what a flat large body looks like. */
function flatMessage(bytes: number): Buffer {
  const head = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rate_limit_status","arguments":{"pad":"';
  const tail = '"}}}';
  return Buffer.from(head + 'a'.repeat(bytes - head.length - tail.length) + tail);
}

/** Small pings (41 bytes each), so 23,000 of them fit under the default 1 MiB body limit and reach the batch check. */
function batchOf(messages: number): Buffer {
  return Buffer.from(JSON.stringify(Array.from({ length: messages }, (_, i) => ({ jsonrpc: '2.0', id: i % 10, method: 'ping' }))));
}

const ATTACKS: readonly Attack[] = [
  { name: 'nested', label: '1 MB nested arrays (500,000 levels), no token', authenticated: false, body: nestedArrays(BODY_BYTES) },
  { name: 'flat', label: '1 MB flat body (one message, 1 MB string), no token', authenticated: false, body: flatMessage(BODY_BYTES) },
  { name: 'batch', label: '23,000-message batch, no token', authenticated: false, body: batchOf(23_000) },
  { name: 'nested-token', label: '1 MB nested arrays, attackers hold a token', authenticated: true, body: nestedArrays(BODY_BYTES) },
  { name: 'batch-token', label: '23,000-message batch, attackers hold a token', authenticated: true, body: batchOf(23_000) },
];

// ---------------------------------------------------------------- server side

type Ready = { readonly port: number; readonly integratorSecret: string; readonly attackerSecret: string };

/** Child mode: the real app, as src/server.ts builds it, on a free loopback port. */
async function serve(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-attack-bench-'));
  const { loadConfig } = await import('../src/config/config');
  const { buildService } = await import('../src/service/build-service');
  const { silentLogger } = await import('../src/shared/logger');
  const { TokenService } = await import('../src/tokens/token-service');
  const { applyServerTimeouts } = await import('../src/service/server-timeouts');
  const config = loadConfig({
    RATE_LIMIT_BACKEND: 'memory',
    TOKEN_STORE: 'file',
    TOKENS_FILE: path.join(dir, 'tokens.json'),
    // Every integrator call stays within its limit: the bench times the common path under attack, not refusals.
    RATE_LIMIT_PER_MINUTE: '100000000',
    // rate_limit_status is free (policies/free-calls.ts), counted on the free limit: 600 a minute ran out mid-round.
    RATE_LIMIT_FREE_PER_MINUTE: '100000000',
    LOG_FORMAT: 'json',
  });
  const service = await buildService(config, { logger: silentLogger });
  const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
  const integrator = await tokens.create({ name: 'integrator' });
  const attacker = await tokens.create({ name: 'attacker' });
  serveAsBenchChild(
    service.app,
    (server): Ready => {
      applyServerTimeouts(server, config.http);
      return { port: (server.address() as AddressInfo).port, integratorSecret: integrator.secret, attackerSecret: attacker.secret };
    },
    () => service.release().finally(() => rmSync(dir, { recursive: true, force: true })),
  );
}

type ServerChild = BenchChild<Ready>;

function startServer(): Promise<ServerChild> {
  return startBenchChild<Ready>(__filename, ['--serve'], { name: 'attack bench server' });
}

// ---------------------------------------------------------------- load side

/** The status of one POST /mcp; 0 when the server cut the connection first (an answer too, for an attacker). */
function post(agent: http.Agent, port: number, body: Buffer, secret: string | undefined): Promise<number> {
  return new Promise((resolve) => {
    const headers: http.OutgoingHttpHeaders = { Accept: ACCEPT, 'Content-Type': 'application/json', 'Content-Length': body.length };
    if (secret !== undefined) headers.Authorization = `Bearer ${secret}`;
    const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

const CALL = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } }));

/** The integrator: back-to-back calls on one keep-alive connection for `durationMs`; each call's wall time in ms. */
async function integratorLatencies(port: number, secret: string, durationMs: number, out: number[] | null): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const endMs = performance.now() + durationMs;
  let failures = 0;
  try {
    while (performance.now() < endMs) {
      const startedMs = performance.now();
      if ((await post(agent, port, CALL, secret)) !== 200) failures++;
      out?.push(performance.now() - startedMs);
    }
  } finally {
    agent.destroy();
  }
  return failures;
}

type AttackCounts = { requests: number; readonly statuses: Map<number, number> };

/** Attacker mode, a child of its own so the attackers' work never runs on the integrator's event loop: each client sends the same body until told to stop. */
async function attack(port: number, name: string, secret: string | undefined): Promise<void> {
  const chosen = ATTACKS.find((a) => a.name === name);
  if (chosen === undefined) throw new Error(`unknown attack ${name}`);
  const counts: AttackCounts = { requests: 0, statuses: new Map() };
  let stopped = false;
  process.once('message', () => (stopped = true));
  process.send?.('started');
  const client = async (): Promise<void> => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (!stopped) {
      const status = await post(agent, port, chosen.body, secret);
      counts.requests++;
      counts.statuses.set(status, (counts.statuses.get(status) ?? 0) + 1);
    }
    agent.destroy();
  };
  await Promise.all(Array.from({ length: ATTACKERS }, client));
  process.send?.({ requests: counts.requests, statuses: [...counts.statuses] });
  process.exit(0);
}

async function startAttackers(port: number, attackChosen: Attack, ready: Ready): Promise<{ stop(): Promise<AttackCounts> }> {
  const args = ['--attack', String(port), attackChosen.name, ...(attackChosen.authenticated ? [ready.attackerSecret] : [])];
  const child = await startBenchChild<'started'>(__filename, args, { name: 'attackers' });
  return {
    // Their answer to 'stop' is their tally; then they exit on their own.
    stop: () => child.request<{ requests: number; statuses: [number, number][] }>('stop').then((m) => ({ requests: m.requests, statuses: new Map(m.statuses) })),
  };
}

/** One round: the integrator timed, alone or under `chosen`; the attack's answers and the server's CPU (µs) meanwhile. */
async function underAttack(server: ServerChild, chosen: Attack | undefined, out: number[]): Promise<{ counts: AttackCounts; serverCpuUs: number }> {
  const { ready } = server;
  const port = ready.port;
  const attackers = chosen === undefined ? undefined : await startAttackers(port, chosen, ready);
  // Let the attack reach steady state before timing the integrator.
  if (attackers !== undefined) await new Promise((resolve) => setTimeout(resolve, 300));
  const cpuBeforeUs = await server.cpuUs();
  const failures = await integratorLatencies(port, ready.integratorSecret, ROUND_MS, out);
  const serverCpuUs = (await server.cpuUs()) - cpuBeforeUs;
  const counts = (await attackers?.stop()) ?? { requests: 0, statuses: new Map<number, number>() };
  if (failures > 0) throw new Error(`${failures} integrator calls failed${chosen === undefined ? '' : ` under ${chosen.name}`}`);
  return { counts, serverCpuUs };
}

type Tally = { readonly latencies: number[]; readonly counts: AttackCounts; serverCpuUs: number };

export async function runAttackBench(): Promise<BenchTable> {
  const server = await startServer();
  try {
    await integratorLatencies(server.ready.port, server.ready.integratorSecret, WARMUP_MS, null);
    const tallies = new Map<string, Tally>(['baseline', ...ATTACKS.map((a) => a.name)].map((name) => [name, { latencies: [], counts: { requests: 0, statuses: new Map() }, serverCpuUs: 0 }]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const chosen of [undefined, ...ATTACKS]) {
        const tally = tallies.get(chosen?.name ?? 'baseline') as Tally;
        const { counts, serverCpuUs } = await underAttack(server, chosen, tally.latencies);
        tally.serverCpuUs += serverCpuUs;
        tally.counts.requests += counts.requests;
        for (const [status, n] of counts.statuses) tally.counts.statuses.set(status, (tally.counts.statuses.get(status) ?? 0) + n);
      }
    }

    const timedMs = ROUNDS * ROUND_MS;
    const base = tallies.get('baseline') as Tally;
    const baseMedian = median(base.latencies);
    const baseP99 = percentile(base.latencies, 99);
    const row = (label: string, tally: Tally): (string | number)[] => {
      const statuses = [...tally.counts.statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s === 0 ? 'reset' : s}×${n}`).join(' ');
      return [
        label,
        tally.latencies.length,
        median(tally.latencies),
        percentile(tally.latencies, 99),
        median(tally.latencies) / baseMedian,
        percentile(tally.latencies, 99) / baseP99,
        // Share of one core the server used while timed.
        tally.serverCpuUs / 1000 / timedMs,
        tally.counts.requests === 0 ? '-' : Math.round(tally.counts.requests / (timedMs / 1000)),
        statuses === '' ? '-' : statuses,
      ];
    };
    const rows = [row('integrator alone (baseline)', base), ...ATTACKS.map((a) => row(`+ ${ATTACKERS} clients: ${a.label}`, tallies.get(a.name) as Tally))];
    const nestedRatio = median((tallies.get('nested') as Tally).latencies) / baseMedian;
    return {
      title: `Integrator tools/call latency under attack (real app, memory backend, ${ATTACKERS} attackers, ${ROUNDS} rounds × ${ROUND_MS / 1000} s)`,
      columns: ['scenario', 'calls', 'p50 ms', 'p99 ms', 'p50 ×', 'p99 ×', 'server cores', 'attack req/s', 'attack answers'],
      rows,
      notes: [
        `target: p50 under the nested-JSON attack within ${TARGET_RATIO}× baseline; measured ${nestedRatio.toFixed(2)}× (${nestedRatio <= TARGET_RATIO ? 'met' : 'MISSED'})`,
        'server, attackers and integrator are three processes on one machine, all on loopback; "server cores" is the server\'s CPU time over wall time',
      ],
    };
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  const fail = (error: unknown): void => {
    console.error(error);
    process.exit(1);
  };
  const at = process.argv.indexOf('--attack');
  if (at >= 0) {
    const [port, name, secret] = process.argv.slice(at + 1);
    attack(Number(port), name as string, secret).catch(fail);
  } else if (process.argv.includes('--serve')) serve().catch(fail);
  else runAttackBench().then(printTable, fail);
}
