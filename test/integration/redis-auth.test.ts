import { inspect } from 'node:util';
import { createClient } from 'redis';
import type { PolicySet } from '../../src/library/window/policy';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { REDIS_AUTH_REFUSED } from '../../src/library/backends/redis/redis-store-error';
import { createCapturingLogger, type CapturedEntry } from '../support/capturing-logger';
import { startRedisServer, type RedisServer } from '../support/redis-server';

const PASSWORD = 'right-horse-battery';
const WRONG = 'wrong-staple-9f3k';
const POLICIES: PolicySet = [{ name: 'default', limit: 10, windowMs: 60_000 }];

let server: RedisServer;
let admin: ReturnType<typeof createClient>;
const stores: RedisWindowStore[] = [];

beforeAll(async () => {
  server = await startRedisServer({ password: PASSWORD });
  admin = createClient({ url: server.url });
  await admin.connect();
});

afterAll(async () => {
  for (const store of stores) await store.close();
  admin?.destroy();
  await server?.close();
});

function urlWith(auth: string): string {
  return `redis://${auth}127.0.0.1:${server.port}`;
}

function open(url: string): { store: RedisWindowStore; logger: ReturnType<typeof createCapturingLogger> } {
  const logger = createCapturingLogger();
  const store = new RedisWindowStore({ url, logger });
  stores.push(store);
  return { store, logger };
}

const hints = (entries: readonly CapturedEntry[]) => entries.filter((e) => e.fields.event === 'ratelimit.redis_auth_refused');

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Enough time for several reconnect attempts (backoff 50, 100, 200, 400 ms, plus jitter). */
const SEVERAL_RETRIES_MS = 1200;

async function rejectionOf(promise: Promise<unknown>): Promise<Error & { code?: string; redisCode?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

test('a wrong password is logged once, as a hint naming WRONGPASS and the knob, however often the client retries', async () => {
  const url = urlWith(`:${WRONG}@`);
  const { store, logger } = open(url);
  await until(() => hints(logger.entries).length > 0, 5000);
  await new Promise((r) => setTimeout(r, SEVERAL_RETRIES_MS));
  expect(hints(logger.entries)).toEqual([
    {
      severity: 'ERROR',
      message: 'Redis refused the credentials (WRONGPASS): check the password in REDIS_URL or REDIS_URL_FILE',
      fields: { event: 'ratelimit.redis_auth_refused', backend: 'redis', redisCode: 'WRONGPASS' },
    },
  ]);
  // The limiter's calls fail with the same diagnosis, not a bare "client offline".
  const error = await rejectionOf(store.consume('k', Date.now(), POLICIES, 1));
  expect(error).toMatchObject({ name: 'RedisStoreError', code: REDIS_AUTH_REFUSED, redisCode: 'WRONGPASS' });
  expect(error.message).toBe('Redis refused the credentials (WRONGPASS): check the password in REDIS_URL or REDIS_URL_FILE');
  const everything = [inspect(logger.entries, { depth: 8 }), inspect(error), error.stack].join('\n');
  for (const secret of [WRONG, PASSWORD, url]) expect(everything).not.toContain(secret);
});

test('no password where one is required is NOAUTH, with the same hint', async () => {
  const { store, logger } = open(urlWith(''));
  await until(() => hints(logger.entries).length > 0, 5000);
  expect(hints(logger.entries).map((e) => [e.message, e.fields.redisCode])).toEqual([
    ['Redis refused the credentials (NOAUTH): check the password in REDIS_URL or REDIS_URL_FILE', 'NOAUTH'],
  ]);
  await expect(store.consume('k', Date.now(), POLICIES, 1)).rejects.toMatchObject({ code: REDIS_AUTH_REFUSED, redisCode: 'NOAUTH' });
});

test("a user without the limiter's commands is NOPERM: one hint for many refused calls", async () => {
  const userPassword = 'limited-user-pw-77';
  await admin.sendCommand(['ACL', 'SETUSER', 'limited', 'on', `>${userPassword}`, '~*', '+ping', '+hello']);
  const { store, logger } = open(urlWith(`limited:${userPassword}@`));
  expect(await store.whenReady(5000)).toBe(true);
  for (let i = 0; i < 3; i++) {
    await expect(store.consume('k', Date.now(), POLICIES, 1)).rejects.toMatchObject({ code: REDIS_AUTH_REFUSED, redisCode: 'NOPERM' });
  }
  expect(hints(logger.entries).map((e) => [e.severity, e.fields.redisCode])).toEqual([['ERROR', 'NOPERM']]);
  expect(hints(logger.entries)[0]?.message).toMatch(/^Redis refused the credentials \(NOPERM\): the user in REDIS_URL or REDIS_URL_FILE lacks permission/);
  expect(inspect(logger.entries, { depth: 8 })).not.toContain(userPassword);
});

test('the hint is logged again for a new outage, after the credentials worked in between', async () => {
  const storePassword = 'rotated-pass-2';
  const { store, logger } = open(urlWith(`:${storePassword}@`));
  await until(() => hints(logger.entries).length === 1, 5000);

  // The operator rotates the server to the password the store has: it connects and serves.
  await admin.sendCommand(['CONFIG', 'SET', 'requirepass', storePassword]);
  try {
    expect(await store.whenReady(5000)).toBe(true);
    expect(await store.consume('rotated', Date.now(), POLICIES, 1)).toMatchObject({ allowed: true });
  } finally {
    await admin.sendCommand(['CONFIG', 'SET', 'requirepass', PASSWORD]);
  }
  // Its connection is dropped and it must authenticate again, with what is now the wrong password.
  await admin.sendCommand(['CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
  await until(() => hints(logger.entries).length === 2, 5000);
  expect(hints(logger.entries).map((e) => e.fields.redisCode)).toEqual(['WRONGPASS', 'WRONGPASS']);
});
