import { createHash } from 'node:crypto';

/**
 * The Lua twin of `adjustFixedWindow` (algorithms/fixed-window.ts): a refund
 * or a reconciliation of one window's count, atomically. The vectors in
 * test/unit/redis-vectors.ts hold the two together; change one, change both.
 *
 * KEYS[1]  the prefixed key ("windowNumber:count", as the decision script writes it)
 * ARGV[1]  nowMs      ARGV[2] windowMs      ARGV[3] adjustment windowNumber
 * ARGV[4]  atLeastCount                     ARGV[5] deltaUnits (may be negative)
 * ARGV[6]  ttlMarginMs
 *
 * Returns the count stored afterwards, or -1 when nothing was written.
 */
export const REDIS_ADJUST_SCRIPT = `
local nowMs = tonumber(ARGV[1])
local windowMs = tonumber(ARGV[2])
local target = tonumber(ARGV[3])
local atLeast = tonumber(ARGV[4])
local delta = tonumber(ARGV[5])
local ttlMarginMs = tonumber(ARGV[6])

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
if target ~= windowNumber then
  return -1
end
local spent = 0
if storedWindow == windowNumber then
  spent = storedCount
end
local base = spent
if atLeast > base then
  base = atLeast
end
local count = base + delta
if count < 0 then
  count = 0
end
if count == spent then
  return -1
end
local resetAtMs = (windowNumber + 1) * windowMs
redis.call('SET', KEYS[1], string.format('%d:%d', windowNumber, count), 'PX', string.format('%d', resetAtMs - nowMs + ttlMarginMs))
return count
`.trim();

export const REDIS_ADJUST_SHA1 = createHash('sha1').update(REDIS_ADJUST_SCRIPT).digest('hex');
