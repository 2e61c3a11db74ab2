import { createCluster } from 'redis';
import { loadConfig } from '../../src/config/config';
import { decideSet } from '../../src/library/window/decide-set';
import type { PolicySet } from '../../src/library/window/policy';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { REDIS_MISCONFIGURED } from '../../src/library/backends/redis/redis-store-error';
import { createLimitStore } from '../../src/service/create-limit-store';
import { silentLogger } from '../../src/shared/logger';
import { createCapturingLogger } from '../support/capturing-logger';
import { freeClusterPorts, startRedisCluster, type RedisCluster } from '../support/redis-cluster';
import { REDIS_UNAVAILABLE } from '../../src/library/backends/redis/redis-store-error';

// firelimit on a real Redis Cluster (3 masters + 3 replicas of Debian's
// redis-server) as a user points it there: REDIS_MODE=cluster and the seed
// nodes in REDIS_URL, through loadConfig and the service's own store factory.
// Two limiters are two instances. Decision time is injected; only the
// failover test waits, and it polls, for the cluster's own failover.

const NODE_TIMEOUT_MS = 2000;
const NOW_MS = 1_700_000_040_000;
const ONE_LIMIT: PolicySet = [{ name: 'minute', limit: 5, windowMs: 60_000 }];
const TWO_LIMITS: PolicySet = [
  { name: 'burst', algorithm: 'token-bucket', limit: 1, windowMs: 2000, burst: 3 },
  { name: 'minute', algorithm: 'sliding-log', limit: 5, windowMs: 60_000 },
];

let cluster: RedisCluster;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster({ nodeTimeoutMs: NODE_TIMEOUT_MS });
});
afterAll(async () => {
  await Promise.allSettled(opened.map((resource) => resource.close()));
  await cluster?.close();
});

/** One instance: the service's config and store factory for `env`, and a limiter over that store. */
async function instance(policies: PolicySet, clock: () => number, env: Record<string, string> = {}): Promise<RateLimiter> {
  // A deadline far past any loaded machine's latency: these tests are about the figure, and a call past
  // the deadline would be a legitimate local answer (the outage tests are elsewhere).
  const config = loadConfig({ RATE_LIMIT_BACKEND: 'redis', REDIS_MODE: 'cluster', REDIS_URL: cluster.url, RATE_LIMIT_TIMEOUT_MS: '5000', ...env });
  const store = await createLimitStore(config, undefined, { namespace: 'rateLimits', logger: silentLogger });
  const limiter = await createRateLimiter({ store, policies, clock, timeoutMs: config.rateLimit.timeoutMs, probeIntervalMs: 200 });
  opened.push(limiter);
  expect(await limiter.whenReady(10_000)).toBe(true);
  return limiter;
}

/** What the pure decideSet admits for `calls` calls of cost 1 at `nowMs`. */
function admittedByReference(policies: PolicySet, calls: number, nowMs: number): number {
  let states: unknown[] = policies.map(() => null);
  let admitted = 0;
  for (let i = 0; i < calls; i++) {
    const result = decideSet(states, nowMs, policies, 1);
    states = [...result.states];
    if (result.allowed) admitted++;
  }
  return admitted;
}

describe('two instances on a Redis Cluster', () => {
  test('tokens spread over every master, and each token admits exactly its limit across both instances, every decision shared', async () => {
    const clock = () => NOW_MS;
    const [a, b] = [await instance(ONE_LIMIT, clock), await instance(ONE_LIMIT, clock)];
    const tokens = Array.from({ length: 24 }, (_, i) => `tok_spread${i}`);
    const masters = new Set(tokens.map((token) => cluster.masterPortOf(`firelimit:rateLimits:{${token}}`)));
    expect(masters.size).toBe(3);
    const results = await Promise.all(tokens.map(async (token) => {
      const decisions = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).consume(token)));
      return { token, admitted: decisions.filter((d) => d.allowed).length, local: decisions.filter((d) => !d.shared).length };
    }));
    expect(results).toEqual(tokens.map((token) => ({ token, admitted: 5, local: 0 })));
  });

  test('a tier of two limits on one token is one atomic script on one shard: exactly what decideSet admits, from both instances at once', async () => {
    const clock = () => NOW_MS + 1000;
    const [a, b] = [await instance(TWO_LIMITS, clock), await instance(TWO_LIMITS, clock)];
    for (const token of ['tok_two_a', 'tok_two_b', 'tok_two_c', 'tok_two_d']) {
      const decisions = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).consume(token)));
      expect({ token, admitted: decisions.filter((d) => d.allowed).length, local: decisions.filter((d) => !d.shared).length }).toEqual({ token, admitted: admittedByReference(TWO_LIMITS, 10, NOW_MS + 1000), local: 0 });
    }
  });

  test('keys with braces of their own still keep every key of a two-limit decision on one slot', async () => {
    const clock = () => NOW_MS + 2000;
    const [a, b] = [await instance(TWO_LIMITS, clock), await instance(TWO_LIMITS, clock)];
    for (const key of ['tok}x', '{tok', 'a{b}c', '}{', 'x{}y']) {
      const decisions = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).consume(key)));
      expect({ key, admitted: decisions.filter((d) => d.allowed).length, local: decisions.filter((d) => !d.shared).length }).toEqual({ key, admitted: admittedByReference(TWO_LIMITS, 8, NOW_MS + 2000), local: 0 });
    }
  });

  test('1,000 calls over 100 tokens from two instances: not one local (shared: false) decision', async () => {
    let nowMs = NOW_MS + 120_000;
    const clock = () => nowMs;
    const [a, b] = [await instance(TWO_LIMITS, clock), await instance(TWO_LIMITS, clock)];
    let local = 0;
    for (let round = 0; round < 10; round++) {
      nowMs += 700;
      const decisions = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? a : b).consume(`tok_many${i}`)));
      local += decisions.filter((d) => !d.shared).length;
    }
    expect(local).toBe(0);
  });
});

test('after every shard forgot the script, a burst of 300 keys loads it once per shard, not once per key', async () => {
  const store = new RedisWindowStore({ url: cluster.url, mode: 'cluster', keyPrefix: 'burst:', commandTimeoutMs: 5000 });
  opened.push(store);
  expect(await store.whenReady(5000)).toBe(true);
  const masters = cluster.masterPorts();
  const raw = createCluster({ rootNodes: [{ url: cluster.url.split(',')[0] as string }] });
  await raw.connect();
  const onEach = (args: string[]): Promise<unknown[]> => Promise.all(raw.masters.map(async (master) => (await raw.nodeClient(master)).sendCommand(args)));
  try {
    await onEach(['SCRIPT', 'FLUSH']);
    await onEach(['CONFIG', 'RESETSTAT']);
    const decisions = await Promise.all(Array.from({ length: 300 }, (_, i) => store.consume(`tok_burst${i}`, NOW_MS, TWO_LIMITS, 1)));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    const stats = (await onEach(['INFO', 'commandstats'])) as string[];
    const loads = stats.map((info) => Number(/cmdstat_script\|load:calls=(\d+)/.exec(info)?.[1] ?? 0));
    expect({ masters: masters.length, loads }).toEqual({ masters: 3, loads: [1, 1, 1] });
  } finally {
    raw.destroy();
  }
});

describe('replies that mean misconfiguration', () => {
  const seed = (): string => cluster.url.split(',')[0] as string;

  test('a plain client on a cluster node: MOVED is logged at ERROR with its code and the remedy, and the error says so', async () => {
    const logger = createCapturingLogger();
    const store = new RedisWindowStore({ url: seed(), logger });
    opened.push(store);
    expect(await store.whenReady(5000)).toBe(true);
    const seedPort = Number(seed().split(':').pop());
    const token = Array.from({ length: 50 }, (_, i) => `tok_moved${i}`).find((t) => cluster.masterPortOf(`firelimit:${t}`) !== seedPort) as string;
    await expect(store.consume(token, NOW_MS, ONE_LIMIT, 1)).rejects.toMatchObject({ code: REDIS_MISCONFIGURED, redisCode: 'MOVED', message: expect.stringMatching(/set REDIS_MODE=cluster/) });
    await expect(store.consume(token, NOW_MS, ONE_LIMIT, 1)).rejects.toMatchObject({ code: REDIS_MISCONFIGURED });
    const lines = logger.entries.filter((e) => e.fields.event === 'ratelimit.redis_misconfigured');
    expect(lines).toEqual([expect.objectContaining({ severity: 'ERROR', fields: expect.objectContaining({ redisCode: 'MOVED', mode: 'standalone' }) })]);
    expect(lines[0]?.message).toMatch(/REDIS_URL points at a Redis Cluster node; set REDIS_MODE=cluster/);
  });

  test('a plain client on a cluster node with a two-limit tier: CROSSSLOT, logged at ERROR with its code', async () => {
    const logger = createCapturingLogger();
    const store = new RedisWindowStore({ url: seed(), logger });
    opened.push(store);
    expect(await store.whenReady(5000)).toBe(true);
    // The policies' keys land on different slots: Redis answers CROSSSLOT before it would redirect.
    const token = Array.from({ length: 50 }, (_, i) => `tok_cross${i}`).find((t) => new Set(TWO_LIMITS.map((p) => cluster.masterPortOf(`firelimit:${t}:${p.name}`))).size > 1);
    expect(token).toBeDefined();
    const error = await store.consume(token as string, NOW_MS, TWO_LIMITS, 1).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: REDIS_MISCONFIGURED });
    expect(['CROSSSLOT', 'MOVED']).toContain((error as { redisCode?: string }).redisCode);
    expect(logger.entries.filter((e) => e.severity === 'ERROR' && e.fields.event === 'ratelimit.redis_misconfigured')).toHaveLength(1);
  });

  test('a key holding another type: WRONGTYPE, logged at ERROR with the remedy, never a bare error reply', async () => {
    const logger = createCapturingLogger();
    const store = new RedisWindowStore({ url: cluster.url, mode: 'cluster', keyPrefix: 'wt:', logger });
    opened.push(store);
    expect(await store.whenReady(5000)).toBe(true);
    const raw = createCluster({ rootNodes: [{ url: seed() }] });
    await raw.connect();
    try {
      await raw.hSet('wt:{tok_hash}', 'field', 'value');
    } finally {
      raw.destroy();
    }
    await expect(store.consume('tok_hash', NOW_MS, ONE_LIMIT, 1)).rejects.toMatchObject({ code: REDIS_MISCONFIGURED, redisCode: 'WRONGTYPE' });
    expect(logger.entries.filter((e) => e.severity === 'ERROR' && e.fields.redisCode === 'WRONGTYPE')).toHaveLength(1);
  });
});

test('a cluster that is not up yet when firelimit boots is an outage until it is, then the store decides (its first discovery is retried)', async () => {
  const ports = await freeClusterPorts(6);
  const store = new RedisWindowStore({ url: ports.map((port) => `redis://127.0.0.1:${port}`).join(','), mode: 'cluster', keyPrefix: 'late:' });
  opened.push(store);
  expect(await store.whenReady(300)).toBe(false);
  await expect(store.consume('tok_late', NOW_MS, ONE_LIMIT, 1)).rejects.toMatchObject({ code: REDIS_UNAVAILABLE });
  const late = await startRedisCluster({ ports });
  opened.push(late);
  expect(await store.whenReady(15_000)).toBe(true);
  expect((await store.consume('tok_late', NOW_MS, ONE_LIMIT, 1)).allowed).toBe(true);
}, 40_000);

// Frozen first: a SIGCONTed master rejoins as a replica, so the cluster has all its replicas again for the kill.
describe.each([
  ['frozen (SIGSTOP: its sockets stay open, nothing answers)', 'freeze'],
  ['killed with -9', 'kill'],
] as const)('a master %s', (_, how) => {
  test('through the limiter: its keys are shared again within the node timeout + 10 s, from the promoted replica with their count, and the keys of the other shards never stop being shared', async () => {
    // After the previous case the demoted master may still be resyncing: a master without a replica in sync cannot fail over.
    await cluster.whenHealthy(20_000);
    const prefix = `${how}:`;
    const store = new RedisWindowStore({ url: cluster.url, mode: 'cluster', keyPrefix: prefix, commandTimeoutMs: 500 });
    // One outage per shard (ADR 0061): the limiter answers the victim's keys locally, and only those.
    const limiter = await createRateLimiter({ store, policies: ONE_LIMIT, clock: () => NOW_MS, timeoutMs: 500, probeIntervalMs: 200 });
    opened.push(limiter);
    expect(await limiter.whenReady(5000)).toBe(true);
    const tokens = Array.from({ length: 60 }, (_, i) => `tok_${how}${i}`);
    const portOf = new Map(tokens.map((t) => [t, cluster.masterPortOf(`${prefix}{${t}}`)]));
    const victimPort = portOf.get(tokens[0] as string) as number;
    const victim = tokens.filter((t) => portOf.get(t) === victimPort);
    const others = tokens.filter((t) => portOf.get(t) !== victimPort);
    expect(new Set(others.map((t) => portOf.get(t))).size).toBe(2);
    for (const token of tokens) expect(await limiter.consume(token)).toMatchObject({ shared: true });
    // Replication is asynchronous: wait until the victim's replica has the count, so the figure after the failover is known.
    const raw = createCluster({ rootNodes: [{ url: cluster.url.split(',')[0] as string }] });
    await raw.connect();
    try {
      expect(await raw.sendCommand(`${prefix}{${victim[0] as string}}`, false, ['WAIT', '1', '5000'])).toBe(1);
    } finally {
      raw.destroy();
    }

    if (how === 'kill') cluster.kill(victimPort);
    else cluster.suspend(victimPort);
    const killedAtMs = Date.now();
    let otherFailures = 0;
    let victimLocal = 0;
    let sharedAgainAfterMs: number | undefined;
    while (Date.now() - killedAtMs < NODE_TIMEOUT_MS + 10_000) {
      // Cost 0: reads, so the figure stays put while the test polls.
      const [onVictim, ...onOthers] = await Promise.all([victim[0] as string, ...others].map((t) => limiter.consume(t, { cost: 0 })));
      otherFailures += onOthers.filter((decision) => !decision.shared).length;
      if (onVictim?.shared === true) {
        sharedAgainAfterMs = Date.now() - killedAtMs;
        break;
      }
      victimLocal++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Asked before a frozen master resumes: until it hears it was replaced it still calls itself master.
    const servedBy = sharedAgainAfterMs === undefined ? victimPort : cluster.masterPortOf(`${prefix}{${victim[0] as string}}`);
    if (how === 'freeze') cluster.resume(victimPort);
    expect({ sharedAgainWithinBound: sharedAgainAfterMs !== undefined, otherFailures, victimSeenDown: victimLocal > 0 }).toEqual({ sharedAgainWithinBound: true, otherFailures: 0, victimSeenDown: true });
    // The promoted replica holds what the dead master had counted: the figure went on, not back to zero.
    const after = await limiter.consume(victim[0] as string, { cost: 0 });
    expect(after.shared).toBe(true);
    expect(after.remaining).toBe(4);
    expect(servedBy).not.toBe(victimPort);
  }, 60_000);
});

test('the store computes each key\'s slot as the cluster does (CLUSTER KEYSLOT), unicode included', async () => {
  const { clusterSlotOfKey } = await import('../../src/library/backends/redis/cluster-slot');
  const raw = createCluster({ rootNodes: [{ url: cluster.url.split(',')[0] as string }] });
  await raw.connect();
  try {
    const tags = ['tok_a', 'tök_ü', '日本語のキー', 'addr:2001:db8::1', '\u0001}x', '}x', 'a{b}c', 'a{}b', 'a'.repeat(300), ...Array.from({ length: 100 }, (_, i) => `tok_${i * 7919}`)];
    const keys = tags.flatMap((tag) => [tag, `firelimit:{${tag}}:0`]);
    for (const key of keys) {
      expect([key, clusterSlotOfKey(key)]).toEqual([key, await raw.sendCommand(undefined, true, ['CLUSTER', 'KEYSLOT', key])]);
    }
  } finally {
    raw.destroy();
  }
});

