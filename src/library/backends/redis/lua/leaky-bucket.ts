import type { LeakyBucketState } from '../../../window/leaky-bucket';
import { LUA_CEIL_MS, luaParseIntegers } from './lua-fragments';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `leakyBucket` (GCRA, algorithms/leaky-bucket.ts), decide
 * and adjust, called as twin-protocol.ts describes. The value is
 * "tatMs:tatRemainder" (TAT = tatMs + tatRemainder / limit ms). Same integer
 * arithmetic, line for line; test/integration/algorithm-lua-twins.test.ts holds
 * the two together.
 */
export const LEAKY_BUCKET_TWIN = luaTwin(`
${luaParseIntegers('^(%d+):(%d+)$')}

local function shift(ms, rem, units)
  local r = rem + units * windowMs
  local carry = math.floor(r / limit)
  return ms + carry, r - carry * limit
end

local function later(am, ar, bm, br)
  if am > bm or (am == bm and ar >= br) then
    return am, ar
  end
  return bm, br
end

local function tatOf(s)
  if not s then
    return nowMs, 0
  end
  return shift(s[1], s[2], 0)
end

local function withinSpan(ms, rem, span)
  local spanMs = math.floor(span / limit)
  local spanRem = span - spanMs * limit
  local aheadMs = ms - nowMs
  return aheadMs < spanMs or (aheadMs == spanMs and rem <= spanRem)
end

${LUA_CEIL_MS}

local state = parse(redis.call('GET', KEYS[1]))

if mode == 'decide' then
  local cost = amount
  local tm, tr = tatOf(state)
  local bm, br = later(tm, tr, nowMs, 0)
  local mm, mr = shift(bm, br, cost)
  local allowed = cost == 0 or (cost <= burst and withinSpan(mm, mr, burst * windowMs))
  local am, ar = bm, br
  if allowed then
    am, ar = mm, mr
  end
  local resetAtMs = ceilMs(am, ar)
  local remaining = 0
  if withinSpan(am, ar, burst * windowMs) then
    local aheadScaled = (am - nowMs) * limit + ar
    remaining = math.floor((burst * windowMs - aheadScaled) / windowMs)
  end
  local retryAfterMs = 0
  if not allowed and cost > burst then
    retryAfterMs = math.max(1, resetAtMs - nowMs)
  elseif not allowed then
    local rm, rr = shift(bm, br, cost - burst)
    retryAfterMs = ceilMs(rm, rr) - nowMs
  end
  if allowed and cost > 0 then
    store(string.format('%d:%d', am, ar), resetAtMs)
  end
  return reply(allowed, remaining, resetAtMs, retryAfterMs)
end

local delta = amount
local atLeast = parse(atLeastRaw)
local sm, sr = tatOf(state)
local om, orem = later(sm, sr, nowMs, 0)
local km, kr = tatOf(atLeast)
local mm, mr = later(om, orem, km, kr)
local dm, dr = shift(mm, mr, delta)
local rm, rr = later(dm, dr, nowMs, 0)
if rm == om and rr == orem then
  return {0}
end
store(string.format('%d:%d', rm, rr), ceilMs(rm, rr))
return {1}
`);

export function formatLeakyBucketValue(state: LeakyBucketState): string {
  return `${state.tatMs}:${state.tatRemainder}`;
}

export function parseLeakyBucketValue(value: string | null): LeakyBucketState | null {
  const match = value === null ? null : /^(\d+):(\d+)$/.exec(value);
  return match === null ? null : { tatMs: Number(match[1]), tatRemainder: Number(match[2]) };
}
