import { createClient } from 'redis';
import type { AlgorithmName } from '../../src/library/window/algorithm';
import type { PolicySet } from '../../src/library/window/policy';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { SET_SCRIPT } from '../../src/library/backends/redis/lua/set-script';
import { FLEET_HEARTBEAT_SCRIPT, FLEET_HEARTBEAT_SHA1 } from '../../src/library/backends/redis/lua/fleet-heartbeat';
import { scheduledFromReply, UPSTREAM_SCHEDULE_SCRIPT, UPSTREAM_SCHEDULE_SHA1, upstreamScheduleArgs, upstreamScheduleKeys } from '../../src/library/backends/redis/lua/upstream-schedule';
import { adjustCommand, assertAdjustReply, decideCommand, decisionFromSetReply } from '../../src/library/backends/redis/redis-set-command';
import type { UpstreamPolicy } from '../../src/library/schedule/upstream-policy';
import { startRedisServer, type RedisServer } from '../support/redis-server';

// ADR 0068: the store speaks RESP3, by name. RESP3 changes how a script's return
// value is encoded (a Lua boolean becomes a RESP3 boolean instead of 1 / nil, a table
// may be a map or a double), so every script the store sends is run here through a
// RESP2 and a RESP3 client side by side and must answer the same: the protocol is a
// choice about the wire, not about what the store parses, and a script that starts
// returning booleans or RESP3 types shows up here first.

const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket'];
const NOW = 1_700_000_000_000;
const UPSTREAM: UpstreamPolicy = { limit: 2, windowMs: 60_000, headroomBp: 10_000, maxWaitMs: 60_000, dailyBudget: 4, graceMs: 1_000, maxReservations: 3, maxReservationsPerHolder: 2 };

/** What the tests need of either client. */
interface Client {
  connect(): Promise<unknown>;
  sendCommand(args: string[]): Promise<unknown>;
  destroy(): void;
}

let server: RedisServer;
let clients: readonly [Client, Client] | undefined;
const resp2 = (): Client => (clients as readonly [Client, Client])[0];
const resp3 = (): Client => (clients as readonly [Client, Client])[1];

beforeAll(async () => {
  server = await startRedisServer();
  // Named, so the store's (unnamed) connection is the one left in CLIENT LIST.
  clients = [createClient({ url: server.url, RESP: 2, name: 'resp2-test' }), createClient({ url: server.url, RESP: 3, name: 'resp3-test' })];
  for (const client of clients) await client.connect();
  for (const source of [SET_SCRIPT, UPSTREAM_SCHEDULE_SCRIPT, FLEET_HEARTBEAT_SCRIPT]) await resp2().sendCommand(['SCRIPT', 'LOAD', source]);
});

afterAll(async () => {
  for (const client of clients ?? []) client.destroy();
  await server?.close();
});

/** The same commands, on keys of their own per protocol (`commands(prefix)`), through each client: each reply must match. */
async function bothAnswerAlike(commands: (prefix: string) => string[][]): Promise<unknown[]> {
  const two = commands('resp2:');
  const three = commands('resp3:');
  const replies: unknown[] = [];
  for (let i = 0; i < two.length; i++) {
    const a = await resp2().sendCommand(two[i] as string[]);
    const b = await resp3().sendCommand(three[i] as string[]);
    expect(b).toStrictEqual(a);
    replies.push(a);
  }
  return replies;
}

describe('every script the store sends answers alike over RESP2 and RESP3', () => {
  it.each(ALGORITHMS)('the set script, %s: allowed, denied, adjusted, and parsed', async (algorithm) => {
    const policies: PolicySet = [{ name: 'p', limit: 2, windowMs: 60_000, algorithm }];
    const replies = await bothAnswerAlike((prefix) => [
      decideCommand(prefix, 'k', NOW, '10000', policies, 1),
      decideCommand(prefix, 'k', NOW + 1, '10000', policies, 1),
      decideCommand(prefix, 'k', NOW + 2, '10000', policies, 1),
      adjustCommand(prefix, 'k', NOW + 3, '10000', policies, [{ deltaUnits: -1, atLeast: null }]),
      decideCommand(prefix, 'k', NOW + 4, '10000', policies, 1),
    ]);
    const decided = [0, 1, 2, 4].map((i) => decisionFromSetReply(replies[i], policies).allowed);
    // The refund gave one unit back, so the last call fits again.
    expect(decided).toEqual([true, true, false, true]);
    expect(() => assertAdjustReply(replies[3], policies)).not.toThrow();
  });

  it('the set script, a set of two policies (one key each)', async () => {
    const policies: PolicySet = [
      { name: 'minute', limit: 1, windowMs: 60_000 },
      { name: 'hour', limit: 5, windowMs: 3_600_000, algorithm: 'token-bucket' },
    ];
    const replies = await bothAnswerAlike((prefix) => [decideCommand(prefix, 'k', NOW, '10000', policies, 1), decideCommand(prefix, 'k', NOW + 1, '10000', policies, 1)]);
    expect(replies.map((reply) => decisionFromSetReply(reply, policies).allowed)).toEqual([true, false]);
  });

  it('the upstream schedule script: run, reserved, rejected', async () => {
    const replies = await bothAnswerAlike((prefix) =>
      [0, 1, 2, 3, 4].map((i) => ['EVALSHA', UPSTREAM_SCHEDULE_SHA1, '3', ...upstreamScheduleKeys(`${prefix}u`), ...upstreamScheduleArgs(NOW + i, 'holder', UPSTREAM)]),
    );
    const statuses = replies.map((reply) => scheduledFromReply(reply).outcome.status);
    expect(statuses).toContain('run');
    expect(statuses).toContain('reserved');
    expect(statuses).toContain('rejected');
  });

  it('the fleet heartbeat script: beats and a leave', async () => {
    const replies = await bothAnswerAlike((prefix) => [
      ['EVALSHA', FLEET_HEARTBEAT_SHA1, '1', `${prefix}fleet`, 'a', String(NOW), '30000', 'beat'],
      ['EVALSHA', FLEET_HEARTBEAT_SHA1, '1', `${prefix}fleet`, 'b', String(NOW), '30000', 'beat'],
      ['EVALSHA', FLEET_HEARTBEAT_SHA1, '1', `${prefix}fleet`, 'a', String(NOW), '30000', 'leave'],
    ]);
    expect(replies).toEqual([1, 2, 1]);
  });

  it('an unknown script fails with the same NOSCRIPT message (what the store reloads on)', async () => {
    const command = ['EVALSHA', '0'.repeat(40), '0'];
    const [a, b] = await Promise.all([resp2().sendCommand(command).catch((e: unknown) => e), resp3().sendCommand(command).catch((e: unknown) => e)]);
    expect((a as Error).message).toMatch(/^NOSCRIPT/);
    expect((b as Error).message).toBe((a as Error).message);
  });
});

it("the store's connection speaks RESP3 (its HELLO is what checks a password on connect)", async () => {
  await resp2().sendCommand(['CONFIG', 'RESETSTAT']);
  const store = new RedisWindowStore({ url: server.url, keyPrefix: 'resp-check:' });
  try {
    expect(await store.whenReady(5000)).toBe(true);
    await store.ping();
    const list = String(await resp2().sendCommand(['CLIENT', 'LIST']));
    const lines = list.split('\n').filter((line) => line.includes(' name= '));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/\bresp=3\b/);
    const stats = String(await resp2().sendCommand(['INFO', 'commandstats']));
    expect(stats).toMatch(/cmdstat_hello:calls=1,/);
  } finally {
    await store.close();
  }
});
