import { spawn } from 'node:child_process';
import { inspect } from 'node:util';
import { createClient } from 'redis';
import { createRateLimiter } from '../../src/limiter/create-rate-limiter';
import type { RateLimitPolicy } from '../../src/limiter/policy';
import { RedisWindowStore } from '../../src/limiter/stores/redis-store';
import { REDIS_UNAVAILABLE, RedisStoreError } from '../../src/limiter/stores/redis-store-error';
import { createCapturingLogger } from '../support/capturing-logger';
import { startRedisServer, type RedisServer } from '../support/redis-server';

const PASSWORD = 's3cret-pass';
const MINUTE: RateLimitPolicy = { name: 'default', limit: 120, windowMs: 60_000 };

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
  const policy: RateLimitPolicy = { name: 'p', limit: 5, windowMs: 60_000 };
  const nowMs = 1_700_000_000_123;
  const decisions = [];
  for (let i = 0; i < 7; i++) decisions.push(await store.consume('tok_a', nowMs, policy, 1));
  expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false]);
  expect(decisions.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0]);
  expect(decisions[6]).toMatchObject({ limit: 5, resetAtMs: 1_700_000_040_000, retryAfterMs: 39_877 });
  // The next window starts fresh.
  expect(await store.consume('tok_a', 1_700_000_040_000, policy, 1)).toMatchObject({ allowed: true, remaining: 4 });
});

test('every key it writes carries a TTL: the rest of its window plus the margin', async () => {
  const store = await openStore({ keyPrefix: 'ttl-test:' });
  const nowMs = Date.now();
  const policies: RateLimitPolicy[] = [MINUTE, { name: 's', limit: 3, windowMs: 1000 }, { name: 'h', limit: 9, windowMs: 3_600_000 }];
  for (let i = 0; i < 60; i++) await store.consume(`k${i}`, nowMs, policies[i % 3] as RateLimitPolicy, 1 + (i % 2));
  const keys = await raw.keys('ttl-test:*');
  expect(keys).toHaveLength(60);
  for (const key of keys) {
    const pttlMs = Number(await raw.pTTL(key));
    expect(pttlMs).toBeGreaterThan(0);
    expect(pttlMs).toBeLessThanOrEqual(3_600_000 + 10_000);
  }
});

test('re-loads the script after SCRIPT FLUSH, once for a burst, and keeps counting', async () => {
  const store = await openStore({ keyPrefix: 'noscript-test:' });
  const nowMs = 1_700_000_000_123;
  await raw.scriptFlush();
  expect((await store.consume('k', nowMs, MINUTE, 1)).remaining).toBe(119);
  const loadsBefore = store.scriptLoads;
  expect(loadsBefore).toBeGreaterThanOrEqual(1);

  await raw.scriptFlush();
  expect((await store.consume('k', nowMs, MINUTE, 1)).remaining).toBe(118);
  expect(store.scriptLoads).toBe(loadsBefore + 1);

  // Twenty calls all meet NOSCRIPT together; they share one SCRIPT LOAD.
  await raw.scriptFlush();
  const burst = await Promise.all(Array.from({ length: 20 }, () => store.consume('k', nowMs, MINUTE, 1)));
  expect(burst.every((d) => d.allowed)).toBe(true);
  expect(Math.min(...burst.map((d) => d.remaining))).toBe(98);
  expect(store.scriptLoads).toBe(loadsBefore + 2);
});

test('keyPrefix keeps two deployments on one Redis apart; the default is firelimit:', async () => {
  const a = await openStore({ keyPrefix: 'tenant-a:' });
  const b = await openStore({ keyPrefix: 'tenant-b:' });
  const d = await openStore();
  const one: RateLimitPolicy = { name: 'one', limit: 1, windowMs: 60_000 };
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
    const decisions = await Promise.all(clients.map((c) => c.consume('tok_shared', nowMs, MINUTE, 1)));
    decisions.forEach((d, i) => {
      if (d.allowed) perClient[i] = (perClient[i] ?? 0) + 1;
    });
  }
  expect(perClient.reduce((a, b) => a + b, 0)).toBe(120);
  expect(perClient.every((n) => n >= 30)).toBe(true);
});

// Each worker: its own process and connection, 100 sequential calls after a common "go".
const WORKER = `
const { RedisWindowStore } = require('./src/limiter/stores/redis-store.ts');
const store = new RedisWindowStore({ url: process.env.WORKER_REDIS_URL, keyPrefix: 'xproc:' });
const policy = { name: 'default', limit: 120, windowMs: 60000 };
(async () => {
  if (!(await store.whenReady(10000))) throw new Error('worker could not connect');
  process.stdout.write('ready\\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  let allowed = 0;
  for (let i = 0; i < 100; i++) if ((await store.consume('tok_shared', Number(process.env.WORKER_NOW_MS), policy, 1)).allowed) allowed++;
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
    expect((await store.consume('k', Date.now(), MINUTE, 1)).allowed).toBe(true);

    await down.stop();
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const error = await rejectionOf(store.consume('k', Date.now(), MINUTE, 1));
      expect(performance.now() - t0).toBeLessThan(1500);
      expect(error).toBeInstanceOf(RedisStoreError);
      expect((error as RedisStoreError).code).toBe(REDIS_UNAVAILABLE);
      expect(everyRendering(error)).not.toContain(PASSWORD);
      expect(everyRendering(error)).not.toContain(down.url);
    }

    await down.restart();
    const decision = await eventually(() => store.consume('k', Date.now(), MINUTE, 1), 5000);
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
    const error = await rejectionOf(store.consume('k', Date.now(), MINUTE, 1));
    expect((error as RedisStoreError).code).toBe(REDIS_UNAVAILABLE);
    expect(everyRendering(error)).not.toContain(PASSWORD);

    await down.restart();
    expect(await store.whenReady(5000)).toBe(true);
    expect((await store.consume('k', Date.now(), MINUTE, 1)).allowed).toBe(true);

    expect(await wrong.whenReady(1000)).toBe(false);
    const wrongError = await rejectionOf(wrong.consume('k', Date.now(), MINUTE, 1));
    expect(everyRendering(wrongError)).not.toContain('wrong-s3cret');
    expect(JSON.stringify(logger.entries)).not.toMatch(/s3cret/);
  });

  test('createRateLimiter: while Redis is suspended a decision comes back within the timeout, shared:false', async () => {
    const logger = createCapturingLogger();
    const timeoutMs = 300;
    const limiter = await createRateLimiter({
      backend: 'redis',
      redis: { url: down.url, keyPrefix: 'suspend:' },
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
