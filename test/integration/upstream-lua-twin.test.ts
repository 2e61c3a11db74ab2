import fc from 'fast-check';
import { createClient } from 'redis';
import { DEFAULT_UPSTREAM_TTL_MARGIN_MS, scheduledFromReply, UPSTREAM_SCHEDULE_SCRIPT, UPSTREAM_SCHEDULE_SHA1, upstreamScheduleArgs, upstreamScheduleKeys } from '../../src/library/backends/redis/lua/upstream-schedule';
import type { UpstreamPolicy } from '../../src/library/schedule/upstream-policy';
import { scheduleUpstream, upstreamStateExpiresAtMs } from '../../src/library/schedule/upstream-schedule';
import { formatUpstreamState, parseUpstreamState, type UpstreamState } from '../../src/library/schedule/upstream-state';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { putUpstreamState, readUpstreamState } from '../support/upstream-redis-layout';
import { UPSTREAM_VECTORS } from '../unit/upstream-vectors';

// The upstream scheduler is written twice, in TypeScript and in Lua; this
// suite keeps the pair one: every vector and every random sequence of calls
// goes through both on a real redis-server, and must give the same outcome
// and leave the same stored value (and a TTL from the same expiry) each step.
// The value is read back whole (the head and both sets, support/upstream-redis-layout.ts).

let server: RedisServer;
let client: ReturnType<typeof createClient>;
let keySeq = 0;

beforeAll(async () => {
  server = await startRedisServer();
  client = createClient({ url: server.url });
  await client.connect();
  expect(await client.sendCommand(['SCRIPT', 'LOAD', UPSTREAM_SCHEDULE_SCRIPT])).toBe(UPSTREAM_SCHEDULE_SHA1);
});

afterAll(async () => {
  client?.destroy();
  await server?.close();
});

const freshKey = () => `twin:upstream:${++keySeq}`;

async function put(key: string, state: UpstreamState | null): Promise<void> {
  await putUpstreamState(client, key, state, 600_000);
}

async function lua(key: string, nowMs: number, holder: string, policy: UpstreamPolicy, claimSlotAtMs: number | null = null) {
  return scheduledFromReply(await client.sendCommand(['EVALSHA', UPSTREAM_SCHEDULE_SHA1, '3', ...upstreamScheduleKeys(key), ...upstreamScheduleArgs(nowMs, holder, policy, DEFAULT_UPSTREAM_TTL_MARGIN_MS, null, claimSlotAtMs)]));
}

async function stored(key: string): Promise<{ raw: string | null; pttlMs: number }> {
  return { raw: await readUpstreamState(client, key), pttlMs: Number(await client.pTTL(key)) };
}

function expectTtl(pttlMs: number, state: UpstreamState, policy: UpstreamPolicy, nowMs: number): void {
  const expected = Math.max(1, upstreamStateExpiresAtMs(state, policy) - nowMs + DEFAULT_UPSTREAM_TTL_MARGIN_MS);
  expect(pttlMs).toBeGreaterThan(0);
  expect(pttlMs).toBeLessThanOrEqual(expected);
  expect(pttlMs).toBeGreaterThan(expected - 5_000);
}

describe('upstream schedule vectors, TypeScript and Lua', () => {
  test.each(UPSTREAM_VECTORS.map((v) => [v.name, v] as const))('%s', async (_name, v) => {
    const ts = scheduleUpstream(v.state, v.nowMs, v.holder, v.policy, v.claimSlotAtMs ?? null);
    expect(ts.outcome).toEqual(v.outcome);
    expect(ts.next).toEqual(v.next);

    const key = freshKey();
    await put(key, v.state);
    const before = await stored(key);
    const result = await lua(key, v.nowMs, v.holder, v.policy, v.claimSlotAtMs ?? null);
    expect(result.outcome).toEqual(v.outcome);
    const after = await stored(key);
    if (v.next === null) {
      expect(after.raw).toBe(before.raw);
      expect(after.pttlMs).toBeLessThanOrEqual(before.pttlMs);
      expect(result.state).toEqual(v.state);
    } else {
      expect(after.raw).toBe(formatUpstreamState(v.next));
      expect(result.state).toEqual(v.next);
      expectTtl(after.pttlMs, v.next, v.policy, v.nowMs);
    }
  });

  test('a value the script did not write reads as the TypeScript parser reads it (junk: no state)', async () => {
    const policy = UPSTREAM_VECTORS[0]?.policy as UpstreamPolicy;
    const key = freshKey();
    const nowMs = 1_700_000_000_123;
    for (const junk of ['', 'junk', '1:2:3', '1:2:3:4,', '1:2:3:4,,x:1', '1:2:3:4,x', '-1:2:3:4', '99999999999999999:0:0:0', '1:2:3:4,a.b:1', '1:2:3:9007199254740993', `${nowMs + 5000}:0:19675:1,${'x'.repeat(65)}:1`]) {
      const expected = scheduleUpstream(parseUpstreamState(junk), nowMs, 'AAAAAAAAAAAAAAAA', policy).outcome;
      await client.set(key, junk);
      expect({ junk, outcome: (await lua(key, nowMs, 'AAAAAAAAAAAAAAAA', policy)).outcome }).toEqual({ junk, outcome: expected });
    }
  });
});

const HOLDERS = ['h0h0h0h0h0h0h0h0', 'h1h1h1h1h1h1h1h1', 'h2h2h2h2h2h2h2h2', 'h3h3h3h3h3h3h3h3'];

test('property: random sequences of callers give identical outcomes and stored state', async () => {
  const policyArb = fc.record({
    limit: fc.integer({ min: 1, max: 30 }),
    windowMs: fc.constantFrom(1000, 7000, 60_000),
    headroomBp: fc.constantFrom(10_000, 9000, 7777),
    maxWaitMs: fc.integer({ min: 0, max: 40_000 }),
    dailyBudget: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8 })),
    graceMs: fc.integer({ min: 0, max: 3000 }),
    maxReservations: fc.integer({ min: 1, max: 4 }),
    perHolder: fc.integer({ min: 1, max: 4 }),
  }).map(({ perHolder, ...p }) => ({ ...p, maxReservationsPerHolder: Math.min(perHolder, p.maxReservations) }));
  // A call back at one of its holder's slots (`which`) echoes it when `echo`: both twins pick among the holder's own the same way.
  const opArb = fc.record({
    holder: fc.integer({ min: 0, max: HOLDERS.length - 1 }),
    back: fc.boolean(),
    which: fc.nat(3),
    echo: fc.boolean(),
    latenessMs: fc.integer({ min: -300, max: 3500 }),
    stepMs: fc.oneof(fc.integer({ min: -2000, max: 3000 }), fc.constant(0), fc.integer({ min: 0, max: 90_000 })),
  });
  // Near a UTC midnight sometimes, so the day's count turns over mid-sequence.
  const startArb = fc.oneof(fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.integer({ min: 1_700_006_400_000 - 60_000, max: 1_700_006_400_000 }));
  await fc.assert(
    fc.asyncProperty(policyArb, startArb, fc.array(opArb, { minLength: 1, maxLength: 25 }), async (policy, startMs, ops) => {
      const key = freshKey();
      let state: UpstreamState | null = null;
      let clockMs = startMs;
      const told = new Map<string, number[]>();
      for (const [i, op] of ops.entries()) {
        const holder = HOLDERS[op.holder] as string;
        const held = told.get(holder) ?? [];
        const back = op.back && held.length > 0 ? (held[op.which % held.length] as number) : undefined;
        const nowMs = back !== undefined ? Math.max(0, back + op.latenessMs) : (clockMs = Math.max(0, clockMs + op.stepMs));
        const claim = back !== undefined && op.echo ? back : null;
        const ts = scheduleUpstream(state, nowMs, holder, policy, claim);
        const result = await lua(key, nowMs, holder, policy, claim);
        expect({ i, outcome: result.outcome }).toEqual({ i, outcome: ts.outcome });
        if (ts.next !== null) state = ts.next;
        if (ts.outcome.status === 'reserved' && !held.includes(ts.outcome.slotAtMs)) told.set(holder, [...held, ts.outcome.slotAtMs]);
        else if (ts.outcome.status === 'run' && ts.outcome.claimed) told.set(holder, held.filter((slot) => slot !== (ts.outcome as { slotAtMs: number }).slotAtMs));
        expect({ i, raw: (await stored(key)).raw }).toEqual({ i, raw: state === null ? null : formatUpstreamState(state) });
      }
    }),
    { numRuns: Number(process.env.FC_RUNS ?? 60) },
  );
});
