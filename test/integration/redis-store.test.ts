import { spawn } from 'node:child_process';
import { inspect } from 'node:util';
import { createClient } from 'redis';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { REDIS_UNAVAILABLE, RedisStoreError } from '../../src/library/backends/redis/redis-store-error';
import { createCapturingLogger } from '../support/capturing-logger';
import { only } from '../support/only-decision';
import { startRedisServer, type RedisServer } from '../support/redis-server';

const PASSWORD = 's3cret-pass';
const MINUTE: RateLimitPolicy = { name: 'default', limit: 120, windowMs: 60_000 };
/** The default layout: a set of exactly one fixed-window policy, one key `prefix + key`. */
const MINUTE_SET: PolicySet = [MINUTE];

let server: RedisServer;
let raw: ReturnType<typeof createClient>;
const stores: RedisWindowStore[] = [];

beforeAll(async () => {
  server = await startRedisServer({ password: PASSWORD });
  raw = createClient({ url: server.url });
  await raw.connect();
});

afterAll(async () => {
  for (const store of stores) await store.close();
  raw?.destroy();
  await server?.close();
});

async function openStore(options: Partial<ConstructorParameters<typeof RedisWindowStore>[0]> = {}): Promise<RedisWindowStore> {
  const store = new RedisWindowStore({ url: server.url, ...options });
  stores.push(store);
  expect(await store.whenReady(5000)).toBe(true);
  return store;
}

/** Everything a caller or a log line could show of an error. */
function everyRendering(error: unknown): string {
  const e = error as Error;
  return [String(error), e?.message, e?.stack, inspect(error, { depth: 5 }), JSON.stringify(error)].join('\n');
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function eventually<T>(attempt: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

test('allows up to the limit, then refuses until the window ends', async () => {
  const store = await openStore({ keyPrefix: 'limit-test:' });
  const policies: PolicySet = [{ name: 'p', limit: 5, windowMs: 60_000 }];
  const nowMs = 1_700_000_000_123;
  const decisions = [];
  for (let i = 0; i < 7; i++) decisions.push(only(await store.consume('tok_a', nowMs, policies, 1)));
  expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false]);
  expect(decisions.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0]);
  expect(decisions[6]).toMatchObject({ limit: 5, resetAtMs: 1_700_000_040_000, retryAfterMs: 39_877 });
  // The next window starts fresh.
  expect(only(await store.consume('tok_a', 1_700_000_040_000, policies, 1))).toMatchObject({ allowed: true, remaining: 4 });
});

test('every key it writes carries a TTL: the rest of its window plus the margin', async () => {
  const store = await openStore({ keyPrefix: 'ttl-test:' });
  const nowMs = Date.now();
  const sets: PolicySet[] = [[MINUTE], [{ name: 's', limit: 3, windowMs: 1000 }], [{ name: 'h', limit: 9, windowMs: 3_600_000 }]];
  for (let i = 0; i < 60; i++) await store.consume(`k${i}`, nowMs, sets[i % 3] as PolicySet, 1 + (i % 2));
  const keys = await raw.keys('ttl-test:*');
  expect(keys).toHaveLength(60);
  for (const key of keys) {
    const pttlMs = Number(await raw.pTTL(key));
    expect(pttlMs).toBeGreaterThan(0);
    expect(pttlMs).toBeLessThanOrEqual(3_600_000 + 10_000);
  }
});

describe('other algorithms and policy sets: one key per policy, `prefix + key + ":" + slot`, decided all or nothing', () => {
  // 1_700_000_040_000 is a minute boundary, so also a 1 s and a 10 s one: every window below starts at T.
  const T = 1_700_000_040_000;
  const MINUTE_WINDOW = T / 60_000;

  /** Every key under the prefix with its value and what is left of its TTL. */
  async function held(prefix: string): Promise<Record<string, { value: string | null; pttlMs: number }>> {
    const out: Record<string, { value: string | null; pttlMs: number }> = {};
    for (const key of (await raw.keys(`${prefix}*`)).sort()) {
      out[key] = { value: (await raw.get(key)) as string | null, pttlMs: Number(await raw.pTTL(key)) };
    }
    return out;
  }

  function expectTtl(pttlMs: number, expiresAtMs: number, nowMs: number): void {
    const expected = expiresAtMs - nowMs + 10_000; // the default margin
    expect(pttlMs).toBeGreaterThan(expected - 5_000);
    expect(pttlMs).toBeLessThanOrEqual(expected);
  }

  test('a token bucket is stored at prefix + key + ":token-bucket:<windowMs>" as "scaledTokens:updatedAtMs", until full', async () => {
    const store = await openStore({ keyPrefix: 'tb-layout:' });
    // 2 tokens per 10 s, 3 at once: a token is 5 s of refill.
    const bucket: PolicySet = [{ name: 'bucket', algorithm: 'token-bucket', limit: 2, windowMs: 10_000, burst: 3 }];
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(only(await store.consume('tb', T, bucket, 1)));
    expect(seen).toEqual([
      { allowed: true, limit: 3, remaining: 2, resetAtMs: T + 5_000, retryAfterMs: 0 },
      { allowed: true, limit: 3, remaining: 1, resetAtMs: T + 10_000, retryAfterMs: 0 },
      { allowed: true, limit: 3, remaining: 0, resetAtMs: T + 15_000, retryAfterMs: 0 },
      { allowed: false, limit: 3, remaining: 0, resetAtMs: T + 15_000, retryAfterMs: 5_000 },
    ]);
    const keys = await held('tb-layout:');
    expect(Object.keys(keys)).toEqual(['tb-layout:tb:token-bucket:10000']);
    // Tokens × windowMs: an empty bucket is 0; the key lives until the bucket is full, plus the margin.
    expect(keys['tb-layout:tb:token-bucket:10000']?.value).toBe(`0:${T}`);
    expectTtl(keys['tb-layout:tb:token-bucket:10000']?.pttlMs ?? 0, T + 15_000, T);

    expect(only(await store.consume('tb', T + 5_000, bucket, 1))).toMatchObject({ allowed: true, remaining: 0 });
    expect((await held('tb-layout:'))['tb-layout:tb:token-bucket:10000']?.value).toBe(`0:${T + 5_000}`);
  });

  test('fixed window 3/1 s + sliding window 5/60 s: one key per policy, and a refusal by either charges neither', async () => {
    const store = await openStore({ keyPrefix: 'pair-layout:' });
    const policies: PolicySet = [
      { name: 'burst', algorithm: 'fixed-window', limit: 3, windowMs: 1_000 },
      { name: 'minute', algorithm: 'sliding-window', limit: 5, windowMs: 60_000 },
    ];
    const second = T / 1_000;
    const FW = 'pair-layout:pair:fixed-window:1000';
    const SW = 'pair-layout:pair:sliding-window:60000';
    const values = async (): Promise<Record<string, string | null>> =>
      Object.fromEntries(Object.entries(await held('pair-layout:')).map(([key, { value }]) => [key, value]));

    for (let i = 0; i < 3; i++) expect((await store.consume('pair', T, policies, 1)).allowed).toBe(true);
    // Not the single fixed window's `prefix + key`: each policy has its own key.
    expect(await values()).toEqual({ [FW]: `${second}:3`, [SW]: `${MINUTE_WINDOW}:3:0` });
    const ttls = await held('pair-layout:');
    expectTtl(ttls[FW]?.pttlMs ?? 0, T + 1_000, T);
    expectTtl(ttls[SW]?.pttlMs ?? 0, T + 120_000, T);

    // The burst policy refuses; the minute policy would allow, and is not charged: it reports 2 still left.
    const byBurst = await store.consume('pair', T, policies, 1);
    expect(byBurst.allowed).toBe(false);
    expect(byBurst.decisions).toEqual([
      { allowed: false, limit: 3, remaining: 0, resetAtMs: T + 1_000, retryAfterMs: 1_000 },
      { allowed: true, limit: 5, remaining: 2, resetAtMs: T + 120_000, retryAfterMs: 0 },
    ]);
    expect(byBurst.states).toEqual([
      { windowNumber: second, count: 3 },
      { windowNumber: MINUTE_WINDOW, count: 3, previousCount: 0 },
    ]);
    expect(await values()).toEqual({ [FW]: `${second}:3`, [SW]: `${MINUTE_WINDOW}:3:0` });

    // A second later the burst window is fresh: two more spend the minute's budget.
    for (let i = 0; i < 2; i++) expect((await store.consume('pair', T + 1_000, policies, 1)).allowed).toBe(true);
    expect(await values()).toEqual({ [FW]: `${second + 1}:2`, [SW]: `${MINUTE_WINDOW}:5:0` });

    // Now the minute policy refuses; the burst policy would allow (1 left) and is not charged.
    const byMinute = await store.consume('pair', T + 1_000, policies, 1);
    expect(byMinute.allowed).toBe(false);
    expect(byMinute.decisions).toEqual([
      { allowed: true, limit: 3, remaining: 1, resetAtMs: T + 2_000, retryAfterMs: 0 },
      // The earliest fit: 12 s into the next minute, when the 5 spent weigh 4.
      { allowed: false, limit: 5, remaining: 0, resetAtMs: T + 120_000, retryAfterMs: 71_000 },
    ]);
    expect(await values()).toEqual({ [FW]: `${second + 1}:2`, [SW]: `${MINUTE_WINDOW}:5:0` });
  });
});

test('re-loads the script after SCRIPT FLUSH, once for a burst, and keeps counting', async () => {
  const store = await openStore({ keyPrefix: 'noscript-test:' });
  const nowMs = 1_700_000_000_123;
  await raw.scriptFlush();
  expect(only(await store.consume('k', nowMs, MINUTE_SET, 1)).remaining).toBe(119);
  const loadsBefore = store.scriptLoads;
  expect(loadsBefore).toBeGreaterThanOrEqual(1);

  await raw.scriptFlush();
  expect(only(await store.consume('k', nowMs, MINUTE_SET, 1)).remaining).toBe(118);
  expect(store.scriptLoads).toBe(loadsBefore + 1);

  // Twenty calls all meet NOSCRIPT together; they share one SCRIPT LOAD.
  await raw.scriptFlush();
  const burst = (await Promise.all(Array.from({ length: 20 }, () => store.consume('k', nowMs, MINUTE_SET, 1)))).map(only);
  expect(burst.every((d) => d.allowed)).toBe(true);
  expect(Math.min(...burst.map((d) => d.remaining))).toBe(98);
  expect(store.scriptLoads).toBe(loadsBefore + 2);
});

test('keyPrefix keeps two deployments on one Redis apart; the default is firelimit:', async () => {
  const a = await openStore({ keyPrefix: 'tenant-a:' });
  const b = await openStore({ keyPrefix: 'tenant-b:' });
  const d = await openStore();
  const one: PolicySet = [{ name: 'one', limit: 1, windowMs: 60_000 }];
  const nowMs = Date.now();
  expect((await a.consume('shared-key', nowMs, one, 1)).allowed).toBe(true);
  expect((await b.consume('shared-key', nowMs, one, 1)).allowed).toBe(true);
  expect((await a.consume('shared-key', nowMs, one, 1)).allowed).toBe(false);
  expect((await d.consume('shared-key', nowMs, one, 1)).allowed).toBe(true);
  expect((await raw.keys('*shared-key')).sort()).toEqual(['firelimit:shared-key', 'tenant-a:shared-key', 'tenant-b:shared-key']);
});

test('three clients on separate connections, 300 interleaved calls, limit 120: exactly 120 allowed', async () => {
  const clients = [await openStore({ keyPrefix: 'x3:' }), await openStore({ keyPrefix: 'x3:' }), await openStore({ keyPrefix: 'x3:' })];
  // One fixed instant, so a minute boundary during the test cannot open a second window.
  const nowMs = Date.now();
  // Rounds of three racing calls, one per client, so all three spend from the window throughout.
  const perClient = [0, 0, 0];
  for (let round = 0; round < 100; round++) {
    const decisions = await Promise.all(clients.map((c) => c.consume('tok_shared', nowMs, MINUTE_SET, 1)));
    decisions.forEach((d, i) => {
      if (d.allowed) perClient[i] = (perClient[i] ?? 0) + 1;
    });
  }
  expect(perClient.reduce((a, b) => a + b, 0)).toBe(120);
  expect(perClient.every((n) => n >= 30)).toBe(true);
});

// Each worker: its own process and connection, 100 sequential calls after a common "go".
const WORKER = `
const { RedisWindowStore } = require('./src/library/backends/redis/redis-store.ts');
const store = new RedisWindowStore({ url: process.env.WORKER_REDIS_URL, keyPrefix: 'xproc:' });
const policies = [{ name: 'default', limit: 120, windowMs: 60000 }];
(async () => {
  if (!(await store.whenReady(10000))) throw new Error('worker could not connect');
  process.stdout.write('ready\\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  let allowed = 0;
  for (let i = 0; i < 100; i++) if ((await store.consume('tok_shared', Number(process.env.WORKER_NOW_MS), policies, 1)).allowed) allowed++;
  process.stdout.write(JSON.stringify({ allowed }) + '\\n');
  await store.close();
})().catch((e) => { console.error(e.code ?? e.name); process.exit(1); });
`;

test('three separate processes, 300 calls, limit 120: exactly 120 allowed', async () => {
  const env = { ...process.env, WORKER_REDIS_URL: server.url, WORKER_NOW_MS: String(Date.now()) };
  const workers = [0, 1, 2].map(() =>
    spawn(process.execPath, ['--require', 'tsx/cjs', '-e', WORKER], { cwd: process.cwd(), env, stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const lines = workers.map((w) => {
    const queue: string[] = [];
    const waiters: ((line: string) => void)[] = [];
    let buffer = '';
    w.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        const waiter = waiters.shift();
        if (waiter) waiter(line);
        else queue.push(line);
      }
    });
    return (): Promise<string> => new Promise((resolve) => (queue.length > 0 ? resolve(queue.shift() as string) : waiters.push(resolve)));
  });
  try {
    expect(await Promise.all(lines.map((next) => next()))).toEqual(['ready', 'ready', 'ready']);
    for (const w of workers) w.stdin.end('go\n');
    const results = (await Promise.all(lines.map((next) => next()))).map((line) => (JSON.parse(line) as { allowed: number }).allowed);
    expect(results.reduce((a, b) => a + b, 0)).toBe(120);
  } finally {
    for (const w of workers) if (w.exitCode === null) w.kill();
  }
}, 60_000);

describe('outages', () => {
  let down: RedisServer;
  beforeAll(async () => {
    down = await startRedisServer({ password: PASSWORD });
  });
  afterAll(async () => {
    await down?.close();
  });

  test('stopped: consume rejects fast without the URL; restarted: it works again; nothing logged holds the secret', async () => {
    const logger = createCapturingLogger();
    const store = new RedisWindowStore({ url: down.url, keyPrefix: 'outage:', logger });
    stores.push(store);
    expect(await store.whenReady(5000)).toBe(true);
    expect((await store.consume('k', Date.now(), MINUTE_SET, 1)).allowed).toBe(true);

    await down.stop();
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const error = await rejectionOf(store.consume('k', Date.now(), MINUTE_SET, 1));
      expect(performance.now() - t0).toBeLessThan(1500);
      expect(error).toBeInstanceOf(RedisStoreError);
      expect((error as RedisStoreError).code).toBe(REDIS_UNAVAILABLE);
      expect(everyRendering(error)).not.toContain(PASSWORD);
      expect(everyRendering(error)).not.toContain(down.url);
    }

    await down.restart();
    const decision = only(await eventually(() => store.consume('k', Date.now(), MINUTE_SET, 1), 5000));
    expect(decision).toMatchObject({ allowed: true, remaining: 119 });

    const logged = JSON.stringify(logger.entries);
    expect(logged).toContain('ratelimit.redis_down');
    expect(logged).toContain('ratelimit.redis_up');
    expect(logged).not.toContain(PASSWORD);
    expect(logged).not.toContain(down.url);
  });

  test('down at startup is an outage, not a crash; a wrong password never shows up either', async () => {
    await down.stop();
    const logger = createCapturingLogger();
    const store = new RedisWindowStore({ url: down.url, keyPrefix: 'outage:', logger });
    const wrongUrl = down.url.replace(PASSWORD, 'wrong-s3cret');
    const wrong = new RedisWindowStore({ url: wrongUrl, logger });
    stores.push(store, wrong);
    const error = await rejectionOf(store.consume('k', Date.now(), MINUTE_SET, 1));
    expect((error as RedisStoreError).code).toBe(REDIS_UNAVAILABLE);
    expect(everyRendering(error)).not.toContain(PASSWORD);

    await down.restart();
    expect(await store.whenReady(5000)).toBe(true);
    expect((await store.consume('k', Date.now(), MINUTE_SET, 1)).allowed).toBe(true);

    expect(await wrong.whenReady(1000)).toBe(false);
    const wrongError = await rejectionOf(wrong.consume('k', Date.now(), MINUTE_SET, 1));
    expect(everyRendering(wrongError)).not.toContain('wrong-s3cret');
    expect(JSON.stringify(logger.entries)).not.toMatch(/s3cret/);
  });

  test('createRateLimiter: while Redis is suspended a decision comes back within the timeout, shared:false', async () => {
    const logger = createCapturingLogger();
    const timeoutMs = 300;
    const limiter = await createRateLimiter({
      store: new RedisWindowStore({ url: down.url, keyPrefix: 'suspend:', logger }),
      policy: MINUTE,
      timeoutMs,
      // Short, so the outage guard's probe finds Redis back quickly once resumed.
      probeIntervalMs: 100,
      logger,
    });
    try {
      expect(limiter.backend).toBe('redis');
      const first = await eventually(async () => {
        const d = await limiter.consume('tok_s');
        if (!d.shared) throw new Error('not connected yet');
        return d;
      }, 5000);
      expect(first).toMatchObject({ allowed: true, shared: true, reason: 'within_limit' });

      down.suspend();
      try {
        for (let i = 0; i < 3; i++) {
          const t0 = performance.now();
          const decision = await limiter.consume('tok_s');
          expect(performance.now() - t0).toBeLessThan(timeoutMs + 400);
          expect(decision).toMatchObject({ allowed: true, shared: false, reason: 'local_fallback' });
        }
      } finally {
        down.resume();
      }
      const back = await eventually(async () => {
        const d = await limiter.consume('tok_s');
        if (!d.shared) throw new Error('still local');
        return d;
      }, 5000);
      expect(back.allowed).toBe(true);
      expect(JSON.stringify(logger.entries)).not.toContain(PASSWORD);
    } finally {
      await limiter.close();
    }
  });
});
