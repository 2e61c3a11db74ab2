import { createHash } from 'node:crypto';
import type { AlgorithmName } from '../../../window/algorithm';
import { FIXED_WINDOW_TWIN } from './fixed-window';
import { LEAKY_BUCKET_TWIN } from './leaky-bucket';
import { SLIDING_LOG_TWIN } from './sliding-log';
import { SLIDING_WINDOW_TWIN } from './sliding-window';
import { TOKEN_BUCKET_TWIN } from './token-bucket';
import { LUA_TTL_UNTIL } from './lua-fragments';
import { LUA_REPLY, type LuaTwin } from './twin-protocol';

/**
 * The one script the Redis store runs: every algorithm's Lua twin as a
 * function, and a driver that decides a whole policy set on one EVALSHA, so a
 * call held to several limits is charged all or nothing, atomically.
 *
 * KEYS[i]  policy i's key (its value is the algorithm's compact string)
 * ARGV[1]  'decide' or 'adjust'   ARGV[2] nowMs   ARGV[3] ttlMarginMs
 * then six per policy i, from ARGV[4 + 6(i-1)]:
 *          algorithm name, limit, windowMs, burst (resolved), amount
 *          (decide: cost; adjust: deltaUnits, 0 for none), atLeast ('' for none)
 *
 * decide replies, per policy: allowed 1|0, remaining, resetAtMs, retryAfterMs,
 * then the key's value after the call ('' when none). Writes happen only when
 * every policy allows; in a refused set each policy that would allow is asked
 * again at cost 0, so its figures say what it still holds.
 * adjust replies, per policy: written 1|0 and the value after.
 *
 * The twins are the very files the per-algorithm vectors test, with their GET
 * turned into a parameter and their writes deferred until the driver commits.
 */

const TWINS: Readonly<Record<AlgorithmName, LuaTwin>> = {
  'fixed-window': FIXED_WINDOW_TWIN,
  'sliding-window': SLIDING_WINDOW_TWIN,
  'sliding-log': SLIDING_LOG_TWIN,
  'token-bucket': TOKEN_BUCKET_TWIN,
  'leaky-bucket': LEAKY_BUCKET_TWIN,
};

const GET_OWN_KEY = "redis.call('GET', KEYS[1])";

/**
 * A twin's body as a branch of twinOf, returning
 * `function(raw, mode, limit, windowMs, burst, amount, atLeastRaw, store, remove, reply)`.
 * Each function literal a script runs is a closure made on every call: only
 * the algorithms the set uses are made, not all five.
 */
function asBranch(name: string, twin: LuaTwin): string {
  if (twin.body.split(GET_OWN_KEY).length !== 2) throw new Error(`the ${name} twin must read its key exactly once, as ${GET_OWN_KEY}`);
  const body = twin.body.replace(GET_OWN_KEY, 'raw');
  if (body.includes('KEYS[') || body.includes('redis.call')) throw new Error(`the ${name} twin must not touch Redis except through its raw value, store and remove`);
  return `if name == '${name}' then\n  return function(raw, mode, limit, windowMs, burst, amount, atLeastRaw, store, remove, reply)\n${body}\nend\nend`;
}

export const SET_SCRIPT = `
local mode = ARGV[1]
local nowMs = tonumber(ARGV[2])
local ttlMarginMs = tonumber(ARGV[3])

${LUA_REPLY}

${LUA_TTL_UNTIL}

local function twinOf(name)
${Object.entries(TWINS)
  .map(([name, twin]) => asBranch(name, twin))
  .join('\n')}
  return nil
end

local n = #KEYS
local raws = {}
local writes = {}
local results = {}
local allowedAll = true

local function run(i, runMode, amount, atLeastRaw)
  local base = 3 + (i - 1) * 6
  local write = nil
  local function store(value, expiresAtMs)
    write = {value, ttlUntil(expiresAtMs)}
  end
  local function remove()
    write = {false, 0}
  end
  local twin = twinOf(ARGV[base + 1])
  if not twin then
    return redis.error_reply('unknown algorithm ' .. tostring(ARGV[base + 1]))
  end
  local r = twin(raws[i], runMode, tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4]), amount, atLeastRaw, store, remove, reply)
  return r, write
end

-- A stored value holding an integer past 2^53 - 1 is junk, read as no value: no store writes one,
-- the TypeScript side refuses it (parseState), and the twins' doubles would overflow (a token bucket
-- updated at 1e20 ms refused its key for good, with a retryAfterMs of -2^63). Found by
-- test/integration/store-contract-sets.test.ts.
local function sane(raw)
  -- Sixteen characters hold no run of sixteen digits: the common short value needs no scan.
  if not raw or #raw < 16 then
    return raw
  end
  for digits in string.gmatch(raw, '%d+') do
    if #digits > 15 and tonumber(digits) > 9007199254740991 then
      return false
    end
  end
  return raw
end

for i = 1, n do
  raws[i] = sane(redis.call('GET', KEYS[i]))
  local base = 3 + (i - 1) * 6
  local r, write = run(i, mode, tonumber(ARGV[base + 5]), ARGV[base + 6])
  if type(r) ~= 'table' or r.err then
    return r
  end
  results[i] = r
  writes[i] = write
  if mode == 'decide' and r[1] == 0 then
    allowedAll = false
  end
end

local out = {}
for i = 1, n do
  local value = raws[i]
  local write = writes[i]
  if write and allowedAll then
    if write[1] then
      redis.call('SET', KEYS[i], write[1], 'PX', string.format('%d', write[2]))
      value = write[1]
    else
      redis.call('DEL', KEYS[i])
      value = false
    end
  end
  local r = results[i]
  if mode == 'decide' then
    if not allowedAll and r[1] == 1 then
      r = run(i, 'decide', 0, '')
    end
    out[#out + 1] = r[1]
    out[#out + 1] = r[2]
    out[#out + 1] = r[3]
    out[#out + 1] = r[4]
  else
    if write then
      out[#out + 1] = 1
    else
      out[#out + 1] = r[1]
    end
  end
  out[#out + 1] = value or ''
end
return out
`.trim();

export const SET_SCRIPT_SHA1 = createHash('sha1').update(SET_SCRIPT).digest('hex');
