import type { SlidingWindowState } from '../../../window/sliding-window';
import { luaLatestWindow, luaParseIntegers } from './lua-fragments';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `slidingWindow` (algorithms/sliding-window.ts), decide and
 * adjust, called as twin-protocol.ts describes. The value is
 * "windowNumber:count:previousCount". Same integer arithmetic, line for line;
 * test/integration/algorithm-lua-twins.test.ts holds the two together.
 */
export const SLIDING_WINDOW_TWIN = luaTwin(`
${luaParseIntegers('^(%d+):(%d+):(%d+)$')}

local function rolled(s, n)
  if not s then
    return 0, 0
  end
  if s[1] == n then
    return s[2], s[3]
  end
  if s[1] == n - 1 then
    return 0, s[2]
  end
  return 0, 0
end

local function room(count, previousCount, elapsed)
  return math.floor((limit * windowMs - previousCount * (windowMs - elapsed) - count * windowMs) / windowMs)
end

local function resetAt(n, count, previousCount, effectiveNowMs)
  if count > 0 then
    return (n + 2) * windowMs
  end
  if previousCount > 0 then
    return (n + 1) * windowMs
  end
  return effectiveNowMs
end

local function earliestFit(n, elapsed, count, previousCount, cost)
  local slack = limit - count - cost
  if slack >= 0 then
    if previousCount == 0 then
      return n * windowMs + elapsed
    end
    local x = math.max(elapsed, windowMs - math.floor((slack * windowMs) / previousCount))
    if x < windowMs then
      return n * windowMs + x
    end
  end
  if count == 0 then
    return (n + 1) * windowMs
  end
  local y = math.max(0, windowMs - math.floor(((limit - cost) * windowMs) / count))
  if y < windowMs then
    return (n + 1) * windowMs + y
  end
  return (n + 2) * windowMs
end

local state = parse(redis.call('GET', KEYS[1]))

if mode == 'decide' then
  local cost = amount
${luaLatestWindow(['state'], '  ')}
  local effectiveNowMs = math.max(nowMs, n * windowMs)
  local elapsed = effectiveNowMs - n * windowMs
  local count, previousCount = rolled(state, n)
  local allowed = cost == 0 or (cost <= limit and room(count, previousCount, elapsed) >= cost)
  local spent = count
  if allowed then
    spent = count + cost
  end
  local resetAtMs = resetAt(n, spent, previousCount, effectiveNowMs)
  local retryAfterMs = 0
  if not allowed then
    if cost > limit then
      retryAfterMs = math.max(1, resetAtMs - nowMs)
    else
      retryAfterMs = earliestFit(n, elapsed, count, previousCount, cost) - nowMs
    end
  end
  local remaining = math.max(0, room(spent, previousCount, elapsed))
  if allowed and cost > 0 then
    store(string.format('%d:%d:%d', n, spent, previousCount), resetAtMs)
  end
  return reply(allowed, remaining, resetAtMs, retryAfterMs)
end

local delta = amount
local atLeast = parse(atLeastRaw)
${luaLatestWindow(['state', 'atLeast'])}
local ownCount, ownPrevious = rolled(state, n)
local knownCount, knownPrevious = rolled(atLeast, n)
local mergedCount = math.max(ownCount, knownCount) + delta
local count = math.max(0, mergedCount)
local previousCount = math.max(0, math.max(ownPrevious, knownPrevious) + math.min(0, mergedCount))
if count == ownCount and previousCount == ownPrevious then
  return {0}
end
local expiresAtMs = (n + 1) * windowMs
if count > 0 then
  expiresAtMs = (n + 2) * windowMs
end
store(string.format('%d:%d:%d', n, count, previousCount), expiresAtMs)
return {1}
`);

export function formatSlidingWindowValue(state: SlidingWindowState): string {
  return `${state.windowNumber}:${state.count}:${state.previousCount}`;
}

export function parseSlidingWindowValue(value: string | null): SlidingWindowState | null {
  const match = value === null ? null : /^(\d+):(\d+):(\d+)$/.exec(value);
  return match === null ? null : { windowNumber: Number(match[1]), count: Number(match[2]), previousCount: Number(match[3]) };
}
