import type { FixedWindowState } from '../../../window/fixed-window';
import { luaLatestWindow, luaParseIntegers } from './lua-fragments';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `fixedWindow` (algorithms/fixed-window.ts), decide and
 * adjust, called as twin-protocol.ts describes (set-script.ts runs it beside
 * the others). The value is "windowNumber:count", the layout the Redis store
 * always wrote, so keys written before policy sets read back unchanged.
 *
 * As `fixedWindow` does: a cost-0 read is always allowed (even of a window an
 * adjustment pushed past the limit), and adjust takes atLeast as a state (its
 * window may be newer than ours).
 *
 * test/unit/algorithm-vectors.ts and test/integration/algorithm-lua-twins.test.ts
 * hold it to the TypeScript; change one, change both.
 */
export const FIXED_WINDOW_TWIN = luaTwin(`
${luaParseIntegers('^(%d+):(%d+)$')}

local function countIn(s, n)
  if s and s[1] == n then
    return s[2]
  end
  return 0
end

local state = parse(redis.call('GET', KEYS[1]))

if mode == 'decide' then
  local cost = amount
${luaLatestWindow(['state'], '  ')}
  local spent = countIn(state, n)
  local resetAtMs = (n + 1) * windowMs
  local allowed = cost == 0 or spent + cost <= limit
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
    store(string.format('%d:%d', n, count), resetAtMs)
  end
  return reply(allowed, remaining, resetAtMs, retryAfterMs)
end

local delta = amount
local atLeast = parse(atLeastRaw)
${luaLatestWindow(['state', 'atLeast'])}
local spent = countIn(state, n)
local count = math.max(spent, countIn(atLeast, n)) + delta
if count < 0 then
  count = 0
end
if count == spent then
  return {0}
end
store(string.format('%d:%d', n, count), (n + 1) * windowMs)
return {1}
`);

export function formatFixedWindowValue(state: FixedWindowState): string {
  return `${state.windowNumber}:${state.count}`;
}

export function parseFixedWindowValue(value: string | null): FixedWindowState | null {
  const match = value === null ? null : /^(\d+):(\d+)$/.exec(value);
  return match === null ? null : { windowNumber: Number(match[1]), count: Number(match[2]) };
}
