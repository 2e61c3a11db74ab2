import { upstreamScheduleKeys } from '../../src/library/backends/redis/lua/upstream-schedule';
import { formatUpstreamState, type UpstreamState } from '../../src/library/schedule/upstream-state';

/**
 * The upstream quota as the Redis twin keeps it (lua/upstream-schedule.ts):
 * a head string and two sorted sets of reservations beside it. For tests
 * that put a state in place or read one back whole, in the compact form.
 */
interface RedisCommands {
  get(key: string): Promise<unknown>;
  set(key: string, value: string, options: { PX: number }): Promise<unknown>;
  del(keys: string[]): Promise<unknown>;
  zAdd(key: string, members: { score: number; value: string }[]): Promise<unknown>;
  zRange(key: string, min: number, max: number): Promise<unknown>;
  pExpire(key: string, ms: number): Promise<unknown>;
}

/** Writes `state` (or deletes the quota for null) in the twin's layout, all three keys expiring in `pxMs`. */
export async function putUpstreamState(client: RedisCommands, key: string, state: UpstreamState | null, pxMs: number): Promise<void> {
  const [head, bySlot, byHolder] = upstreamScheduleKeys(key);
  await client.del([head, bySlot, byHolder]);
  if (state === null) return;
  await client.set(head, formatUpstreamState({ ...state, reservations: [] }), { PX: pxMs });
  if (state.reservations.length === 0) return;
  await client.zAdd(bySlot, state.reservations.map((r) => ({ score: r.slotAtMs, value: `${r.holder}:${r.slotAtMs}` })));
  await client.zAdd(byHolder, state.reservations.map((r) => ({ score: 0, value: `${r.holder}:${String(r.slotAtMs).padStart(16, '0')}` })));
  await client.pExpire(bySlot, pxMs);
  await client.pExpire(byHolder, pxMs);
}

/** The whole state held for `key` in the compact form (head, then every reservation in slot order), or null without a head. */
export async function readUpstreamState(client: RedisCommands, key: string): Promise<string | null> {
  const [head, bySlot] = upstreamScheduleKeys(key);
  const value = (await client.get(head)) as string | null;
  if (value === null) return null;
  const members = (await client.zRange(bySlot, 0, -1)) as string[];
  return [value, ...members].join(',');
}
