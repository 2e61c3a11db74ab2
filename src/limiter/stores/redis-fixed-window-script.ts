import { createHash } from 'node:crypto';

/**
 * The Lua twin of `decideFixedWindow` (algorithms/fixed-window.ts), run by
 * Redis atomically for one key. test/unit/redis-vectors.ts is the table both
 * must agree on; change one, change the other and the table.
 *
 * Kept as a TypeScript string so `tsc` carries it into dist/ with no copy step.
 *
 * KEYS[1]  the prefixed key; its value is "windowNumber:count"
 * ARGV[1]  nowMs, as a decimal string (a Lua double holds epoch ms exactly)
 * ARGV[2]  limit      ARGV[3] windowMs      ARGV[4] cost
 * ARGV[5]  ttlMarginMs, added to the time left in the window
 *
 * Returns {allowed 1|0, remaining, resetAtMs, retryAfterMs}: Redis turns Lua
 * numbers into integer replies, and every one of these is a whole number.
 *
 * The TTL is relative (PX, from the caller's nowMs) rather than PEXPIREAT:
 * an absolute deadline is read against the Redis server's clock, so a server
 * running ahead of the instances would expire live windows early and hand out
 * fresh budgets. Relative, the key lives for what is left of the window plus
 * the margin, whichever clock Redis keeps.
 *
 * Counts are written with %d, not tostring: tostring keeps only 14 significant
 * digits, which would round a count or window number above 10^14.
 */
export const REDIS_FIXED_WINDOW_SCRIPT = `
local nowMs = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local windowMs = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local ttlMarginMs = tonumber(ARGV[5])

local storedWindow = nil
local storedCount = 0
local raw = redis.call('GET', KEYS[1])
if raw then
  local w, c = string.match(raw, '^(%-?%d+):(%d+)$')
  if w then
    storedWindow = tonumber(w)
    storedCount = tonumber(c)
  end
end

local windowNumber = math.floor(nowMs / windowMs)
if storedWindow ~= nil and storedWindow > windowNumber then
  windowNumber = storedWindow
end
local spent = 0
if storedWindow == windowNumber then
  spent = storedCount
end
local resetAtMs = (windowNumber + 1) * windowMs
local allowed = spent + cost <= limit
local count = spent
if allowed then
  count = spent + cost
end
local remaining = limit - count
if remaining < 0 then
  remaining = 0
end
local retryAfterMs = 0
if not allowed then
  retryAfterMs = resetAtMs - nowMs
end

if allowed and cost > 0 then
  redis.call('SET', KEYS[1], string.format('%d:%d', windowNumber, count), 'PX', string.format('%d', resetAtMs - nowMs + ttlMarginMs))
end

if allowed then
  return {1, remaining, resetAtMs, retryAfterMs}
end
return {0, remaining, resetAtMs, retryAfterMs}
`.trim();

/** What EVALSHA names the script by; Redis computes the same SHA1 over the same bytes. */
export const REDIS_FIXED_WINDOW_SHA1 = createHash('sha1').update(REDIS_FIXED_WINDOW_SCRIPT).digest('hex');
