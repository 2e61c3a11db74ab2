import { createHash } from 'node:crypto';
import type { AlgorithmName } from '../../../window/algorithm';
import { FIXED_WINDOW_TWIN } from './fixed-window';
import { LEAKY_BUCKET_TWIN } from './leaky-bucket';
import { SLIDING_LOG_TWIN } from './sliding-log';
import { SLIDING_WINDOW_TWIN } from './sliding-window';
import { TOKEN_BUCKET_TWIN } from './token-bucket';
import { LUA_TWIN_LOCALS, type LuaTwin } from './twin-protocol';

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
 * The twins are the very bodies the per-algorithm vectors test (each one
 * straight-line Lua, twin-protocol.ts), inlined here as branches, with their
 * writes deferred until the driver commits. The script makes no closure and,
 * for one policy, no table but its reply.
 */

const TWINS: Readonly<Record<AlgorithmName, LuaTwin>> = {
  'fixed-window': FIXED_WINDOW_TWIN,
  'sliding-window': SLIDING_WINDOW_TWIN,
  'sliding-log': SLIDING_LOG_TWIN,
  'token-bucket': TOKEN_BUCKET_TWIN,
  'leaky-bucket': LEAKY_BUCKET_TWIN,
};

/**
 * Lua that runs policy `i`'s twin on `raw` with `amount` and `atLeastRaw`,
 * leaving its answer in the result locals (LUA_TWIN_LOCALS): every twin's
 * body inlined as a branch, so a call makes no closure at all (a function per
 * twin, and a store and a remove per policy, had each been one per call).
 */
function dispatch(): string {
  const branches = Object.entries(TWINS).map(([name, twin], i) => `${i === 0 ? 'if' : 'elseif'} name == '${name}' then\n${twin.body}`);
  return `local base = 3 + (i - 1) * 6
local name = argv[base + 1]
local limit = tonumber(argv[base + 2])
local windowMs = tonumber(argv[base + 3])
local burst = tonumber(argv[base + 4])
${LUA_TWIN_LOCALS}
${branches.join('\n')}
else
  return redis.error_reply('unknown algorithm ' .. tostring(name))
end`;
}

/** Lua that writes `value` (a string, or false: deleted) to `key` until `expiresAtMs`, plus the TTL margin. */
const COMMIT = `if value then
  local ttl = expiresAtMs - nowMs + ttlMarginMs
  if ttl < 1 then
    ttl = 1
  end
  redis.call('SET', key, value, 'PX', string.format('%d', ttl))
else
  redis.call('DEL', key)
end`;

export const SET_SCRIPT = `
-- Globals read once: each use of a global is a lookup in the globals table.
local argv = ARGV
local mode = argv[1]
local nowMs = tonumber(argv[2])
local ttlMarginMs = tonumber(argv[3])
local keyCount = #KEYS
local out = nil
local allowedAll = true
-- Sets of several policies only: each key's value, and the writes held back until every policy allows.
local raws, values, expiries
if keyCount > 1 then
  raws, values, expiries, out = {}, {}, {}, {}
end

for i = 1, keyCount do
  local key = KEYS[i]
  local raw = redis.call('GET', key)
  -- A stored value holding an integer past 2^53 - 1 is junk, read as no value: no store writes one,
  -- the TypeScript side refuses it (parseState), and the twins' doubles would overflow (a token bucket
  -- updated at 1e20 ms refused its key for good, with a retryAfterMs of -2^63). Found by
  -- test/integration/store-contract-sets.test.ts. Sixteen characters hold no run of sixteen digits:
  -- the common short value needs no scan.
  if raw and #raw >= 16 then
    for digits in string.gmatch(raw, '%d+') do
      if #digits > 15 and tonumber(digits) > 9007199254740991 then
        raw = false
        break
      end
    end
  end
  local amount = tonumber(argv[3 + (i - 1) * 6 + 5])
  local atLeastRaw = argv[3 + (i - 1) * 6 + 6]
${dispatch()}
  local value = raw
  if keyCount == 1 then
    if wValue ~= nil then
      local expiresAtMs = wExpiresAtMs
      value = wValue
${COMMIT}
    end
    -- One policy: the reply built whole, one table sized once (filling it index by index regrows it).
    if mode == 'decide' then
      if rAllowed then
        return {1, rRemaining, rResetAtMs, rRetryAfterMs, value or ''}
      end
      return {0, rRemaining, rResetAtMs, rRetryAfterMs, value or ''}
    end
    if wValue ~= nil then
      return {1, value or ''}
    end
    return {0, value or ''}
  else
    raws[i] = raw
    if wValue ~= nil then
      values[i] = wValue
      expiries[i] = wExpiresAtMs
    end
  end
  if mode == 'decide' then
    local at = (i - 1) * 5
    if rAllowed then
      out[at + 1] = 1
    else
      out[at + 1] = 0
      allowedAll = false
    end
    out[at + 2] = rRemaining
    out[at + 3] = rResetAtMs
    out[at + 4] = rRetryAfterMs
    out[at + 5] = value or ''
  else
    if wValue ~= nil then
      out[2 * i - 1] = 1
    else
      out[2 * i - 1] = 0
    end
    out[2 * i] = value or ''
  end
end

if keyCount > 1 then
  for i = 1, keyCount do
    local value = values[i]
    if value ~= nil and (allowedAll or mode ~= 'decide') then
      local key = KEYS[i]
      local expiresAtMs = expiries[i]
${COMMIT}
      if mode == 'decide' then
        out[(i - 1) * 5 + 5] = value or ''
      else
        out[2 * i] = value or ''
      end
    end
  end
  -- A refused set charged nothing: each policy that would have allowed says what it still holds, at cost 0.
  if mode == 'decide' and not allowedAll then
    for i = 1, keyCount do
      local at = (i - 1) * 5
      if out[at + 1] == 1 then
        local raw = raws[i]
        local amount = 0
        local atLeastRaw = ''
${dispatch()}
        out[at + 1] = 1
        if not rAllowed then
          out[at + 1] = 0
        end
        out[at + 2] = rRemaining
        out[at + 3] = rResetAtMs
        out[at + 4] = rRetryAfterMs
      end
    end
  end
end
return out
`.trim();

export const SET_SCRIPT_SHA1 = createHash('sha1').update(SET_SCRIPT).digest('hex');
