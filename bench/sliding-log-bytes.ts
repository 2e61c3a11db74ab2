import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createClient } from 'redis';
import { slidingLog, type SlidingLogState } from '../src/library/window/algorithms';
import { stateSlotOf, type PolicySet, type RateLimitPolicy } from '../src/library/window/policy';
import { MemoryWindowStore } from '../src/library/memory/memory-store';
import { RedisWindowStore } from '../src/library/backends/redis/redis-store';
import { startRedisServer } from '../test/support/redis-server';
import type { BenchTable } from './bench-table';

/**
 * What a full sliding log of limit 1,000 costs to keep, per entry: in the
 * memory store (V8 heap plus typed-array backing stores, after a full GC)
 * and in Redis (MEMORY USAGE of the key), each beside the form it replaced,
 * measured in the same run. The logs are filled by consume, one call per
 * 60 ms, as a client at its limit would.
 */

const POLICY: RateLimitPolicy = { name: 'log', algorithm: 'sliding-log', limit: 1_000, windowMs: 60_000 };
const POLICIES: PolicySet = [POLICY];
const ENTRIES = POLICY.limit;
const GAP_MS = 60;
const MEMORY_KEYS = 50;
const REDIS_KEYS = 5;
const START_MS = 1_764_000_000_000;

function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc ?? (setFlagsFromString('--expose-gc'), runInNewContext('gc') as () => void);
  gc();
  gc();
}

function heapBytes(): number {
  collectGarbage();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** Bytes an entry of `build`'s result, over MEMORY_KEYS full logs; the result is kept alive until measured. */
function bytesPerEntry(build: () => unknown): number {
  const before = heapBytes();
  const kept = build();
  const after = heapBytes();
  // Read after the measurement, so the collector cannot drop what was built.
  if (kept === undefined) throw new Error('bench: nothing built');
  return (after - before) / (MEMORY_KEYS * ENTRIES);
}

function fillMemoryStore(): MemoryWindowStore {
  const store = new MemoryWindowStore();
  for (let k = 0; k < MEMORY_KEYS; k++) {
    for (let i = 0; i < ENTRIES; i++) store.consumeSync(`key${k}`, START_MS + i * GAP_MS, POLICIES, 1);
  }
  return store;
}

function fullLog(): SlidingLogState {
  let state: SlidingLogState | null = null;
  for (let i = 0; i < ENTRIES; i++) state = slidingLog.decide(state, START_MS + i * GAP_MS, POLICY, 1).next ?? state;
  return state as SlidingLogState;
}

/** The log as the memory store kept it before it was packed: the state decide returns, an array per entry. */
function fillUnpacked(): Map<string, SlidingLogState> {
  const held = new Map<string, SlidingLogState>();
  for (let k = 0; k < MEMORY_KEYS; k++) held.set(`key${k}`, fullLog());
  return held;
}

async function redisBytes(): Promise<{ packed: number; unpacked: number; valueBytes: number }> {
  const server = await startRedisServer();
  const client = createClient({ url: server.url });
  const store = new RedisWindowStore({ url: server.url, keyPrefix: 'bytes:' });
  try {
    await client.connect();
    if (!(await store.whenReady(5000))) throw new Error('bench: RedisWindowStore did not connect');
    let packed = 0;
    let unpacked = 0;
    let valueBytes = 0;
    for (let k = 0; k < REDIS_KEYS; k++) {
      for (let i = 0; i < ENTRIES; i++) await store.consume(`key${k}`, START_MS + i * GAP_MS, POLICIES, 1);
      const redisKey = `bytes:key${k}:${stateSlotOf(POLICY)}`;
      const value = (await client.get(redisKey)) as string;
      valueBytes += value.length;
      packed += Number(await client.sendCommand(['MEMORY', 'USAGE', redisKey, 'SAMPLES', '0']));
      // The unpacked form older releases wrote, of the same log.
      const old = `old:${redisKey}`;
      await client.set(old, fullLog().entries.map(([t, u]) => `${t}:${u}`).join(','));
      unpacked += Number(await client.sendCommand(['MEMORY', 'USAGE', old, 'SAMPLES', '0']));
    }
    const per = REDIS_KEYS * ENTRIES;
    return { packed: packed / per, unpacked: unpacked / per, valueBytes: valueBytes / per };
  } finally {
    await store.close();
    client.destroy();
    await server.close();
  }
}

export async function runSlidingLogBytes(): Promise<BenchTable> {
  // Each measured twice, the second kept: the first also pays for code and maps compiled on the way.
  bytesPerEntry(fillUnpacked);
  const unpackedMemory = bytesPerEntry(fillUnpacked);
  bytesPerEntry(fillMemoryStore);
  const packedMemory = bytesPerEntry(fillMemoryStore);
  const redis = await redisBytes();
  return {
    title: `Sliding log of limit ${ENTRIES}, full (one call per ${GAP_MS} ms): bytes per entry`,
    columns: ['where', 'form', 'bytes/entry', 'target'],
    rows: [
      ['memory', 'entries as arrays (before)', unpackedMemory, ''],
      ['memory', 'packed: Uint32Array of offsets and units (MemoryWindowStore)', packedMemory, '<= 16'],
      ['redis', '"t:u,t:u" (before), MEMORY USAGE', redis.unpacked, ''],
      ['redis', 'packed "~t,dt,dt:u" (RedisWindowStore), MEMORY USAGE', redis.packed, '<= 8'],
      ['redis', '(packed value length alone)', redis.valueBytes, ''],
    ],
    notes: [
      `memory: heapUsed + arrayBuffers after a full GC, over ${MEMORY_KEYS} keys; redis: MEMORY USAGE ... SAMPLES 0 over ${REDIS_KEYS} keys, node ${process.version}`,
      'RTDB keeps the same packed string as Redis (stores/state-codecs.ts)',
    ],
  };
}
