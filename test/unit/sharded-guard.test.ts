import { ShardedGuard, outageGuardFor } from '../../src/library/limiter/sharded-guard';
import { OutageGuard } from '../../src/library/limiter/outage-guard';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import { ShardedLimitStore } from '../../src/library/support/sharded-store';
import { createCapturingLogger } from '../support/capturing-logger';
import { LimiterMetrics } from '../../src/metrics/limiter-metrics';

const down = (): Promise<never> => Promise.reject(new Error('down'));
const up = (): Promise<string> => Promise.resolve('ok');

function guard(clock: () => number = () => 0) {
  const logger = createCapturingLogger();
  const metrics = new LimiterMetrics();
  return { guard: new ShardedGuard({ backend: 'rtdb', timeoutMs: 1000, probeIntervalMs: 5000, logger, clock, metrics }), logger, metrics };
}

describe('ShardedGuard: one outage per shard of a store', () => {
  test('a failing shard opens an outage for its calls alone; another shard is still asked', async () => {
    const { guard: sharded } = guard();
    expect(await sharded.run(down, undefined, 'db-a')).toMatchObject({ ok: false, cause: 'error' });
    expect(await sharded.run(up, undefined, 'db-a')).toMatchObject({ ok: false, cause: 'outage' });
    expect(await sharded.run(up, undefined, 'db-b')).toEqual({ ok: true, value: 'ok' });
    expect(sharded.openShards).toEqual(['db-a']);
    // A call that names no shard is the whole store's, untouched by db-a's outage.
    expect(await sharded.run(up)).toEqual({ ok: true, value: 'ok' });
  });

  test('the outage lines name their shard', async () => {
    let nowMs = 0;
    const { guard: sharded, logger } = guard(() => nowMs);
    await sharded.run(down, undefined, 'https://db-a.example');
    nowMs = 5000;
    await sharded.run(up, undefined, 'https://db-a.example');
    expect(logger.entries.map((entry) => [entry.fields.event, entry.fields.shard])).toEqual([
      ['ratelimit.outage_started', 'https://db-a.example'],
      ['ratelimit.outage_ended', 'https://db-a.example'],
    ]);
  });

  test('the backend gauge reads 1 while any shard is out, and each shard has its own', async () => {
    let nowMs = 0;
    const { guard: sharded, metrics } = guard(() => nowMs);
    await sharded.run(down, undefined, 'a');
    await sharded.run(down, undefined, 'b');
    nowMs = 5000;
    await sharded.run(up, undefined, 'a');
    let text = await metrics.scrape();
    expect(text).toContain('firelimit_backend_outage_active{backend="rtdb"} 1');
    expect(text).toContain('firelimit_backend_shard_outage_active{backend="rtdb",shard="a"} 0');
    expect(text).toContain('firelimit_backend_shard_outage_active{backend="rtdb",shard="b"} 1');
    await sharded.run(up, undefined, 'b');
    text = await metrics.scrape();
    expect(text).toContain('firelimit_backend_outage_active{backend="rtdb"} 0');
    expect(text).toMatch(/firelimit_backend_outages_total\{backend="rtdb"\} 2/);
  });
});

describe('outageGuardFor: the guard a store gets', () => {
  test.each([
    ['a store of one database: one outage', () => new MemoryWindowStore(), OutageGuard],
    ['a store over several: one outage per shard', () => new ShardedLimitStore([{ id: 'a', store: new MemoryWindowStore() }, { id: 'b', store: new MemoryWindowStore() }]), ShardedGuard],
  ])('%s', (_name, makeStore, kind) => {
    const made = outageGuardFor(makeStore(), { backend: 'rtdb', timeoutMs: 1000, probeIntervalMs: 5000, logger: createCapturingLogger() });
    expect(made).toBeInstanceOf(kind);
  });
});

describe('ShardedGuard: the store-wide guard', () => {
  test('a call that names no shard uses the store-wide guard, apart from every shard', async () => {
    const { guard: sharded } = guard();
    expect(await sharded.run(down)).toMatchObject({ ok: false, cause: 'error' });
    expect(sharded.guardOf(undefined).state.open).toBe(true);
    // The shards are untouched by the store-wide outage.
    expect(await sharded.run(up, undefined, 'db-a')).toEqual({ ok: true, value: 'ok' });
    expect(sharded.guardOf('db-a').state.open).toBe(false);
  });

  test('a store-wide outage (a cluster before its topology was known) ends when a shard answers', async () => {
    const { guard: sharded, logger } = guard();
    await sharded.run(down);
    expect(sharded.guardOf(undefined).state.open).toBe(true);
    await sharded.run(up, undefined, 'slots 0-5460');
    expect(sharded.guardOf(undefined).state.open).toBe(false);
    expect(logger.entries.map((entry) => entry.fields.event)).toEqual(['ratelimit.outage_started', 'ratelimit.outage_ended']);
  });

  test('a shard that fails does not end the store-wide outage, and the failure is passed on as it is', async () => {
    const { guard: sharded } = guard();
    await sharded.run(down);
    expect(await sharded.run(down, undefined, 'slots 0-5460')).toMatchObject({ ok: false, cause: 'error' });
    expect(sharded.guardOf(undefined).state.open).toBe(true);
  });

  test('a shard answering while nothing store-wide is open is passed on as it is', async () => {
    const { guard: sharded } = guard();
    expect(await sharded.run(up, undefined, 'a')).toEqual({ ok: true, value: 'ok' });
    expect(sharded.openShards).toEqual([]);
  });

  test('the same shard keeps one guard; openShards lists only the open ones', async () => {
    const { guard: sharded } = guard();
    expect(sharded.guardOf('a')).toBe(sharded.guardOf('a'));
    await sharded.run(down, undefined, 'b');
    await sharded.run(up, undefined, 'c');
    expect(sharded.openShards).toEqual(['b']);
  });
});
