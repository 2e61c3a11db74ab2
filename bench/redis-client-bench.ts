import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { createClient } from 'redis';
import type { PolicySet } from '../src/library/window/policy';
import { DEFAULT_REDIS_COMMAND_TIMEOUT_MS, DEFAULT_REDIS_MAX_PENDING_COMMANDS, RedisWindowStore } from '../src/library/backends/redis/redis-store';
import { SET_SCRIPT, SET_SCRIPT_SHA1 } from '../src/library/backends/redis/lua/set-script';
import { decideCommand, decisionFromSetReply } from '../src/library/backends/redis/redis-set-command';
import { startRedisServer } from '../test/support/redis-server';
import { median, microseconds, percentile, printTable, type BenchTable } from './bench-table';
import { RawRedisClient } from './raw-redis-client';

/**
 * node-redis 6's cost per command (issue 22, item 3), RESP2 against RESP3,
 * as a ratio to a raw-socket floor (bench/raw-redis-client.ts) on the same
 * server in the same run: a PING, the store's real decision (an EVALSHA of
 * the set script with the store's arguments), and the decision with 10 calls
 * in flight at once (node-redis' command queue and write batching). The
 * store as configured is measured beside them. Rounds are interleaved and
 * rotated so drift hits every row alike; the ratio is also taken within each
 * round, against the floor's p50 of that round, and its median reported.
 */

const KEY_COUNT = 1_000;
const ROUNDS = 20;
const CALLS_PER_ROUND = 1_000;
const WARMUP_CALLS = 1_000;
const IN_FLIGHT = 10;
const TTL_MARGIN_ARG = '10000';
const POLICIES: PolicySet = [{ name: 'bench', limit: 1_000_000_000, windowMs: 60_000 }];

type Send = (args: string[]) => Promise<unknown>;

interface Candidate {
  readonly name: string;
  /** The raw-socket row of the same operation. */
  readonly floor: string;
  /** One timed unit: one call, or IN_FLIGHT calls at once. */
  readonly call: () => Promise<unknown>;
  readonly callsPerUnit: number;
}

function keyCycle(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}tok_${(n++ % KEY_COUNT).toString(36).padStart(6, '0')}`;
}

/** PING, one decision, and IN_FLIGHT decisions at once, for one way of sending a command. */
function rowsFor(label: string, send: Send, prefix: string, floors: readonly [string, string, string]): Candidate[] {
  const nextKey = keyCycle(prefix);
  const decide = (): Promise<unknown> => send(decideCommand('', nextKey(), Date.now(), TTL_MARGIN_ARG, POLICIES, 1));
  return [
    { name: `PING, ${label}`, floor: floors[0], call: () => send(['PING']), callsPerUnit: 1 },
    { name: `EVALSHA set script, ${label}`, floor: floors[1], call: decide, callsPerUnit: 1 },
    { name: `EVALSHA x${IN_FLIGHT} in flight, ${label}`, floor: floors[2], call: () => Promise.all(Array.from({ length: IN_FLIGHT }, decide)), callsPerUnit: IN_FLIGHT },
  ];
}

/** The store's own calls: its PING, its consume (the same EVALSHA behind its deadline and reply check). */
function storeRows(store: RedisWindowStore, label: string, floors: readonly [string, string, string]): Candidate[] {
  const nextKey = keyCycle('bench-rc-store:');
  const consume = (): Promise<unknown> => store.consume(nextKey(), Date.now(), POLICIES, 1);
  return [
    { name: `PING, ${label}`, floor: floors[0], call: () => store.ping(), callsPerUnit: 1 },
    { name: `consume, ${label}`, floor: floors[1], call: consume, callsPerUnit: 1 },
    { name: `consume x${IN_FLIGHT} in flight, ${label}`, floor: floors[2], call: () => Promise.all(Array.from({ length: IN_FLIGHT }, consume)), callsPerUnit: IN_FLIGHT },
  ];
}

async function timeUnits(candidate: Candidate, units: number, out: number[] | null): Promise<void> {
  for (let i = 0; i < units; i++) {
    const t0 = process.hrtime.bigint();
    await candidate.call();
    const t1 = process.hrtime.bigint();
    // Per call: a unit of IN_FLIGHT calls counts as IN_FLIGHT calls of its wall time each.
    if (out !== null) out.push(Number(t1 - t0) / candidate.callsPerUnit);
  }
}

function nodeRedisVersion(): string {
  const main = require.resolve('@redis/client');
  const manifest = JSON.parse(readFileSync(path.join(path.dirname(main), '..', 'package.json'), 'utf8')) as { version?: string };
  return manifest.version ?? 'unknown';
}

/** The same decision through each way of sending must come back the same, and parse: else the timing compares different work. */
async function checkReplies(sends: readonly (readonly [string, Send])[]): Promise<void> {
  const replies: unknown[] = [];
  for (const [label, send] of sends) {
    const reply = await send(decideCommand('bench-rc-check:', label, 1_700_000_000_000, TTL_MARGIN_ARG, POLICIES, 1));
    decisionFromSetReply(reply, POLICIES);
    replies.push(reply);
  }
  if (!replies.every((reply) => isDeepStrictEqual(reply, replies[0]))) {
    throw new Error(`bench: the set script's reply differs between clients: ${JSON.stringify(replies)}`);
  }
}

export async function runRedisClientBench(): Promise<BenchTable> {
  const server = await startRedisServer();
  // The store's own client options, so RESP is the only difference between the two node-redis rows.
  const options = {
    socket: { host: '127.0.0.1', port: server.port },
    disableOfflineQueue: true,
    commandsQueueMaxLength: DEFAULT_REDIS_MAX_PENDING_COMMANDS,
    commandOptions: { timeout: DEFAULT_REDIS_COMMAND_TIMEOUT_MS },
    disableClientInfo: true,
  } as const;
  const resp2 = createClient({ ...options, RESP: 2, name: 'bench-resp2' });
  const resp3 = createClient({ ...options, RESP: 3, name: 'bench-resp3' });
  let raw: RawRedisClient | undefined;
  let store: RedisWindowStore | undefined;
  try {
    raw = await RawRedisClient.connect(server.port);
    await raw.send(['CLIENT', 'SETNAME', 'bench-raw']);
    await Promise.all([resp2.connect(), resp3.connect()]);
    store = new RedisWindowStore({ url: server.url, keyPrefix: 'bench-rc-store:' });
    if (!(await store.whenReady(5000))) throw new Error('bench: RedisWindowStore did not connect');
    if ((await raw.send(['SCRIPT', 'LOAD', SET_SCRIPT])) !== SET_SCRIPT_SHA1) throw new Error('bench: SCRIPT LOAD returned another SHA1');

    const r = raw;
    const sendRaw: Send = (args) => r.send(args);
    const sendResp2: Send = (args) => resp2.sendCommand(args);
    const sendResp3: Send = (args) => resp3.sendCommand(args);
    await checkReplies([['raw', sendRaw], ['resp2', sendResp2], ['resp3', sendResp3]]);

    // Which protocol the store's connection speaks: the one unnamed client in CLIENT LIST.
    const list = String(await raw.send(['CLIENT', 'LIST']));
    const storeLine = list.split('\n').find((line) => / name= /.test(line));
    const storeResp = /\bresp=(\d)/.exec(storeLine ?? '')?.[1] ?? '?';

    const rawRows = rowsFor('raw socket (floor)', sendRaw, 'bench-rc-raw:', ['', '', '']);
    const floors = [rawRows[0]?.name, rawRows[1]?.name, rawRows[2]?.name] as [string, string, string];
    const candidates: Candidate[] = [
      ...rawRows.map((c) => ({ ...c, floor: c.name })),
      ...rowsFor('node-redis RESP2', sendResp2, 'bench-rc-resp2:', floors),
      ...rowsFor('node-redis RESP3', sendResp3, 'bench-rc-resp3:', floors),
      ...storeRows(store, `RedisWindowStore as configured (RESP${storeResp})`, floors),
    ];

    const unitsOf = (c: Candidate): number => Math.ceil(CALLS_PER_ROUND / c.callsPerUnit);
    for (const c of candidates) await timeUnits(c, Math.ceil(WARMUP_CALLS / c.callsPerUnit), null);
    const samples = new Map<string, number[]>(candidates.map((c) => [c.name, []]));
    const roundRatios = new Map<string, number[]>(candidates.map((c) => [c.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const thisRound = new Map<string, number[]>();
      for (let j = 0; j < candidates.length; j++) {
        const c = candidates[(round + j) % candidates.length] as Candidate;
        const out: number[] = [];
        await timeUnits(c, unitsOf(c), out);
        thisRound.set(c.name, out);
        samples.get(c.name)?.push(...out);
      }
      for (const c of candidates) roundRatios.get(c.name)?.push(median(thisRound.get(c.name) ?? []) / median(thisRound.get(c.floor) ?? []));
    }

    const stats = new Map(
      candidates.map((c) => {
        const sorted = [...(samples.get(c.name) ?? [])].sort((a, b) => a - b);
        return [c.name, { p50: median(sorted), p99: percentile(sorted, 99), n: sorted.length }] as const;
      }),
    );
    const info = String(await raw.send(['INFO', 'server']));
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    return {
      title: `node-redis per command, RESP2 vs RESP3 vs a raw socket (${ROUNDS} rounds x ${CALLS_PER_ROUND} calls per row, interleaved)`,
      columns: ['operation, client', 'p50 µs', 'p99 µs', 'x floor (p50)', 'x floor (p99)', 'x floor (median of rounds)', 'samples'],
      rows: candidates.map((c) => {
        const st = stats.get(c.name);
        const floor = stats.get(c.floor);
        return [c.name, microseconds(st?.p50 ?? Number.NaN), microseconds(st?.p99 ?? Number.NaN), (st?.p50 ?? Number.NaN) / (floor?.p50 ?? Number.NaN), (st?.p99 ?? Number.NaN) / (floor?.p99 ?? Number.NaN), median(roundRatios.get(c.name) ?? []), st?.n ?? 0];
      }),
      notes: [
        'sequential awaited calls (pipelined=1) over 1,000 keys; the in-flight rows time 10 calls sent in one tick and divide the wall time by 10 (µs per call)',
        "floor: bench/raw-redis-client.ts, one node:net socket, RESP2 arrays out, replies parsed to plain values; 'x floor' is against the floor's row of the same operation",
        `both node-redis clients take the store's options (disableOfflineQueue, commandsQueueMaxLength ${DEFAULT_REDIS_MAX_PENDING_COMMANDS}, commandOptions.timeout ${DEFAULT_REDIS_COMMAND_TIMEOUT_MS} ms, disableClientInfo); only RESP differs`,
        `the set script's reply was the same through all three and parsed (decisionFromSetReply) before timing; the store's connection speaks resp=${storeResp} (CLIENT LIST)`,
        `redis-server ${redisVersion} on 127.0.0.1, node ${process.version}, @redis/client ${nodeRedisVersion()}`,
      ],
    };
  } finally {
    await store?.close();
    resp2.destroy();
    resp3.destroy();
    raw?.destroy();
    await server.close();
  }
}

if (require.main === module) {
  runRedisClientBench().then(printTable, (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
