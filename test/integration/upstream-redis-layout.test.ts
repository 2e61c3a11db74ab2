import fc from 'fast-check';
import { createClient } from 'redis';
import {
  DEFAULT_UPSTREAM_TTL_MARGIN_MS,
  scheduledFromReply,
  UPSTREAM_SCHEDULE_SCRIPT,
  UPSTREAM_SCHEDULE_SHA1,
  UPSTREAM_VIEW_LIMIT,
  upstreamScheduleArgs,
  upstreamScheduleKeys,
} from '../../src/library/backends/redis/lua/upstream-schedule';
import type { UpstreamPolicy } from '../../src/library/schedule/upstream-policy';
import { scheduleUpstream } from '../../src/library/schedule/upstream-schedule';
import { formatUpstreamState, type UpstreamState } from '../../src/library/schedule/upstream-state';
import { fcNumRuns } from '../support/fc-num-runs';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { putUpstreamState, readUpstreamState } from '../support/upstream-redis-layout';
import { UPSTREAM_VECTORS } from '../unit/upstream-vectors';

// The Redis twin's layout (docs/adr/0063): a head and two sorted sets. What
// an older release left (one compact value with its reservations) is read as
// that release read it and moved into the sets; a long queue is decided as
// the TypeScript decides it on the whole state, and answered as a view.

let server: RedisServer;
let client: ReturnType<typeof createClient>;
let keySeq = 0;

beforeAll(async () => {
  server = await startRedisServer();
  client = createClient({ url: server.url });
  await client.connect();
  await client.sendCommand(['SCRIPT', 'LOAD', UPSTREAM_SCHEDULE_SCRIPT]);
});

afterAll(async () => {
  client?.destroy();
  await server?.close();
});

const freshKey = () => `layout:upstream:${++keySeq}`;

async function lua(key: string, nowMs: number, holder: string, policy: UpstreamPolicy, claimSlotAtMs: number | null = null) {
  return scheduledFromReply(await client.sendCommand(['EVALSHA', UPSTREAM_SCHEDULE_SHA1, '3', ...upstreamScheduleKeys(key), ...upstreamScheduleArgs(nowMs, holder, policy, DEFAULT_UPSTREAM_TTL_MARGIN_MS, null, claimSlotAtMs)]));
}

/** The state as a store answers it: the first UPSTREAM_VIEW_LIMIT reservations, and a count of the rest. */
function viewOf(state: UpstreamState | null): UpstreamState | null {
  if (state === null || state.reservations.length <= UPSTREAM_VIEW_LIMIT) return state;
  return { ...state, reservations: state.reservations.slice(0, UPSTREAM_VIEW_LIMIT), omitted: state.reservations.length - UPSTREAM_VIEW_LIMIT };
}

describe('a value an older release wrote (the head with its reservations in one string)', () => {
  const withReservations = UPSTREAM_VECTORS.filter((v) => v.state !== null && v.state.reservations.length > 0);

  test.each(withReservations.map((v) => [v.name, v] as const))('is decided as TypeScript decides it, and left as the head and the sets: %s', async (_name, v) => {
    const key = freshKey();
    await client.set(key, formatUpstreamState(v.state as UpstreamState), { PX: 600_000 });
    const result = await lua(key, v.nowMs, v.holder, v.policy, v.claimSlotAtMs ?? null);
    expect(result.outcome).toEqual(v.outcome);
    const after = v.next ?? v.state;
    expect(result.state).toEqual(after);
    // Moved even by a call that decides no write: the head no longer carries entries.
    expect(await client.get(key)).toBe(formatUpstreamState({ ...(after as UpstreamState), reservations: [] }));
    expect(await readUpstreamState(client, key)).toBe(formatUpstreamState(after as UpstreamState));
  });

  test('written beside the sets during a rolling deploy (an older instance added one), its entries join the ones in the sets', async () => {
    const v = UPSTREAM_VECTORS.find((x) => x.state !== null && x.state.reservations.length === 2 && x.next !== null) as (typeof UPSTREAM_VECTORS)[number];
    const state = v.state as UpstreamState;
    const key = freshKey();
    await putUpstreamState(client, key, { ...state, reservations: state.reservations.slice(0, 1) }, 600_000);
    await client.set(key, formatUpstreamState({ ...state, reservations: state.reservations.slice(1) }), { PX: 600_000 });
    const result = await lua(key, v.nowMs, v.holder, v.policy, v.claimSlotAtMs ?? null);
    expect({ outcome: result.outcome, state: result.state }).toEqual({ outcome: v.outcome, state: v.next });
  });
});

test('sets left without a head are no state: the call is decided as on an empty key, and the leftovers are gone', async () => {
  const v = UPSTREAM_VECTORS.find((x) => x.state !== null && x.state.reservations.length > 0) as (typeof UPSTREAM_VECTORS)[number];
  const key = freshKey();
  await putUpstreamState(client, key, v.state, 600_000);
  await client.del(key);
  const expected = scheduleUpstream(null, v.nowMs, v.holder, v.policy);
  const result = await lua(key, v.nowMs, v.holder, v.policy);
  expect({ outcome: result.outcome, state: result.state }).toEqual({ outcome: expected.outcome, state: expected.next });
  expect(await readUpstreamState(client, key)).toBe(formatUpstreamState(expected.next as UpstreamState));
});

/** 10 a second, headroom 1, 100 ms of grace: slots 200 ms apart once queued; room for 1000, up to 3 a token. */
const LONG: UpstreamPolicy = { limit: 10, windowMs: 1000, headroomBp: 10_000, maxWaitMs: 400_000, dailyBudget: 0, graceMs: 100, maxReservations: 1000, maxReservationsPerHolder: 3 };
const T0 = 1_700_000_000_000;
const holderOf = (i: number) => `h${String(i).padStart(15, '0')}`;

test('property: on a queue of hundreds, random callers get the outcomes of folding scheduleUpstream, each answered with the view of its state, and every key expires', async () => {
  const opArb = fc.record({
    holder: fc.integer({ min: 0, max: 600 }),
    // Back at one of the first slots (some echoing it), or a new call at a time that moves on.
    // The edges of a slot's claim: its first ms, the grace's last, the first after.
    back: fc.option(fc.record({ index: fc.nat(40), echo: fc.boolean(), lateMs: fc.oneof(fc.integer({ min: -300, max: 150 }), fc.constantFrom(0, LONG.graceMs, LONG.graceMs + 1)) }), { nil: undefined }),
    stepMs: fc.integer({ min: 0, max: 400 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 17, max: 600 }), fc.array(opArb, { minLength: 1, maxLength: 30 }), async (held, ops) => {
      const key = freshKey();
      // Filled as an instance would: one run, then `held` reservations of distinct holders, all at T0.
      let state: UpstreamState | null = null;
      for (let i = 0; i <= held; i++) state = scheduleUpstream(state, T0, holderOf(i), LONG).next ?? state;
      await putUpstreamState(client, key, state, 600_000);
      let clockMs = T0;
      for (const [i, op] of ops.entries()) {
        const target = op.back === undefined ? undefined : (state as UpstreamState).reservations[op.back.index];
        const holder = target?.holder ?? holderOf(op.holder);
        const nowMs = target !== undefined && op.back !== undefined ? target.slotAtMs + op.back.lateMs : (clockMs += op.stepMs);
        const claim = target !== undefined && op.back?.echo === true ? target.slotAtMs : null;
        const expected = scheduleUpstream(state, nowMs, holder, LONG, claim);
        const result = await lua(key, nowMs, holder, LONG, claim);
        state = expected.next ?? state;
        expect({ i, outcome: result.outcome, state: result.state }).toEqual({ i, outcome: expected.outcome, state: viewOf(state) });
      }
      expect(await readUpstreamState(client, key)).toBe(formatUpstreamState(state as UpstreamState));
      // Nothing is left to outlive the quota: each key there is expires.
      for (const part of upstreamScheduleKeys(key)) {
        const pttlMs = Number(await client.pTTL(part));
        expect({ part, expires: pttlMs === -2 || pttlMs > 0 }).toEqual({ part, expires: true });
      }
    }),
    { numRuns: fcNumRuns(25) },
  );
});
