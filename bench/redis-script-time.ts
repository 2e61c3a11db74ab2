import type { PolicySet } from '../src/library/window/policy';
import { SET_SCRIPT, SET_SCRIPT_SHA1 } from '../src/library/backends/redis/lua/set-script';
import { decideCommand } from '../src/library/backends/redis/redis-set-command';
import { median, type BenchTable } from './bench-table';

/**
 * Redis's own time per decision (INFO commandstats, usec_per_call of
 * EVALSHA) for the store's set script against a minimal hand-written script
 * for the same one-policy fixed-window decision, same arguments, same keys,
 * same run. Server time, not round trips: the client and the loopback cost
 * the same for both, so only the script's own work tells them apart.
 */

/** What this needs of a node-redis client: raw commands. */
interface Client {
  sendCommand(args: string[]): Promise<unknown>;
}

/** The set script's calling convention and reply, for a single fixed window at cost ≥ 0: nothing else. */
export const MINIMAL_FIXED_WINDOW_SCRIPT = `
local nowMs = tonumber(ARGV[2])
local ttlMarginMs = tonumber(ARGV[3])
local limit = tonumber(ARGV[5])
local windowMs = tonumber(ARGV[6])
local cost = tonumber(ARGV[8])
local raw = redis.call('GET', KEYS[1])
local n = math.floor(nowMs / windowMs)
local spent = 0
if raw then
  local w, c = string.match(raw, '^(%d+):(%d+)$')
  if w then
    w = tonumber(w)
    if w > n then n = w end
    if w == n then spent = tonumber(c) end
  end
end
local resetAtMs = (n + 1) * windowMs
if spent + cost > limit then
  return {0, math.max(0, limit - spent), resetAtMs, resetAtMs - nowMs, raw or ''}
end
local value = string.format('%d:%d', n, spent + cost)
local ttl = resetAtMs - nowMs + ttlMarginMs
if ttl < 1 then ttl = 1 end
redis.call('SET', KEYS[1], value, 'PX', string.format('%d', ttl))
return {1, limit - spent - cost, resetAtMs, 0, value}
`.trim();

// Many short rounds: Redis times a command in wall time, so a round the machine preempted shows as slow; the
// median over many rounds, and the fastest round, are what the scripts themselves cost.
const ROUNDS = 40;
const CALLS_PER_ROUND = 1_000;
/** Calls in flight at once: enough to keep the server busy, so a round is quick. */
const PIPELINE = 50;

interface ScriptCandidate {
  readonly name: string;
  readonly sha1: string;
}

/** usec and calls of EVALSHA since the last CONFIG RESETSTAT. */
async function evalshaStats(client: Client): Promise<{ usec: number; calls: number }> {
  const info = (await client.sendCommand(['INFO', 'commandstats'])) as string;
  const match = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
  if (match === null) throw new Error('bench: INFO commandstats has no cmdstat_evalsha line');
  return { calls: Number(match[1]), usec: Number(match[2]) };
}

async function round(client: Client, candidate: ScriptCandidate, keys: readonly string[], policies: PolicySet, offset: number): Promise<number> {
  await client.sendCommand(['CONFIG', 'RESETSTAT']);
  for (let i = 0; i < CALLS_PER_ROUND; i += PIPELINE) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(i + PIPELINE, CALLS_PER_ROUND); j++) {
      const command = decideCommand('bench-script:', keys[(offset + j) % keys.length] as string, Date.now(), '10000', policies, 1);
      command[1] = candidate.sha1;
      batch.push(client.sendCommand(command));
    }
    await Promise.all(batch);
  }
  const { usec, calls } = await evalshaStats(client);
  if (calls !== CALLS_PER_ROUND) throw new Error(`bench: expected ${CALLS_PER_ROUND} EVALSHA calls, INFO counted ${calls}`);
  return usec / calls;
}

/** Another script of the same calling convention to time beside them (an earlier set script, for a before/after). */
export interface ExtraScript {
  readonly name: string;
  readonly source: string;
}

/** The table of server µs per decision, the set script beside the minimal one, rounds interleaved. */
export async function runScriptTime(client: Client, keys: readonly string[], policies: PolicySet, extra: readonly ExtraScript[] = []): Promise<BenchTable> {
  const minimalSha = (await client.sendCommand(['SCRIPT', 'LOAD', MINIMAL_FIXED_WINDOW_SCRIPT])) as string;
  const setSha = (await client.sendCommand(['SCRIPT', 'LOAD', SET_SCRIPT])) as string;
  if (setSha !== SET_SCRIPT_SHA1) throw new Error('bench: Redis named the set script by another SHA1');
  const candidates: ScriptCandidate[] = [
    { name: 'minimal fixed-window script (floor)', sha1: minimalSha },
    { name: 'set script (RedisWindowStore, default policy)', sha1: setSha },
  ];
  for (const script of extra) candidates.push({ name: script.name, sha1: (await client.sendCommand(['SCRIPT', 'LOAD', script.source])) as string });
  const perCall = new Map<string, number[]>(candidates.map((c) => [c.name, []]));
  // One unrecorded round each first: the keys exist and the scripts are compiled before anything counts.
  for (const candidate of candidates) await round(client, candidate, keys, policies, 0);
  for (let r = 0; r < ROUNDS; r++) {
    for (let j = 0; j < candidates.length; j++) {
      const candidate = candidates[(r + j) % candidates.length] as ScriptCandidate;
      perCall.get(candidate.name)?.push(await round(client, candidate, keys, policies, r * CALLS_PER_ROUND));
    }
  }
  const floorValues = [...(perCall.get(candidates[0]?.name ?? '') ?? [])].sort((a, b) => a - b);
  const floor = median(floorValues);
  const floorMin = floorValues[0] ?? Number.NaN;
  return {
    title: `Redis server time per decision (INFO commandstats, ${ROUNDS} rounds x ${CALLS_PER_ROUND} EVALSHA per script, interleaved)`,
    columns: ['script', 'usec_per_call (median)', 'min', 'max', 'x minimal (median)', 'x minimal (min)'],
    rows: candidates.map((c) => {
      const values = [...(perCall.get(c.name) ?? [])].sort((a, b) => a - b);
      const mid = median(values);
      const min = values[0] ?? Number.NaN;
      return [c.name, mid, min, values[values.length - 1] ?? Number.NaN, mid / floor, min / floorMin];
    }),
    notes: [
      'each round: CONFIG RESETSTAT, then the calls, then usec/calls of cmdstat_evalsha; both scripts get the same arguments (decideCommand) and keys',
      'min: the round least disturbed by the rest of the machine (Redis times commands in wall time)',
      'issue target: set script <= 1.1x the minimal script',
    ],
  };
}
