import type { TokenBucketState } from '../../../window/token-bucket';
import { luaParseIntegers } from './lua-fragments';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `tokenBucket` (algorithms/token-bucket.ts), decide and
 * adjust, called as twin-protocol.ts describes. The value is
 * "scaledTokens:updatedAtMs" (scaledTokens = tokens × windowMs, negative for a
 * debt). Same integer arithmetic, line for line;
 * test/integration/algorithm-lua-twins.test.ts holds the two together.
 */
export const TOKEN_BUCKET_TWIN = luaTwin(`
${luaParseIntegers('^(%-?%d+):(%d+)$')}

local capacity = burst * windowMs

local function levelAt(s, atMs)
  if not s or s[1] >= capacity then
    return capacity
  end
  local untilFullMs = math.ceil((capacity - s[1]) / limit)
  local elapsedMs = atMs - s[2]
  if elapsedMs >= untilFullMs then
    return capacity
  end
  return s[1] + elapsedMs * limit
end

local function fullAt(scaledTokens, atMs)
  local missing = capacity - scaledTokens
  if missing <= 0 then
    return atMs
  end
  return atMs + math.ceil(missing / limit)
end

local state = parse(redis.call('GET', KEYS[1]))

if mode == 'decide' then
  local cost = amount
  local atMs = nowMs
  if state and state[2] > atMs then
    atMs = state[2]
  end
  local level = levelAt(state, atMs)
  local needed = cost * windowMs
  local allowed = cost == 0 or (cost <= burst and needed <= level)
  local after = level
  if allowed then
    after = level - needed
  end
  local resetAtMs = fullAt(after, atMs)
  local retryAfterMs = 0
  if not allowed and cost > burst then
    retryAfterMs = math.max(1, resetAtMs - nowMs)
  elseif not allowed then
    retryAfterMs = atMs + math.ceil((needed - level) / limit) - nowMs
  end
  local remaining = math.max(0, math.floor(after / windowMs))
  if allowed and cost > 0 then
    store(string.format('%d:%d', after, atMs), resetAtMs)
  end
  return reply(allowed, remaining, resetAtMs, retryAfterMs)
end

local delta = amount
local atLeast = parse(atLeastRaw)
local atMs = nowMs
if state and state[2] > atMs then
  atMs = state[2]
end
if atLeast and atLeast[2] > atMs then
  atMs = atLeast[2]
end
local own = levelAt(state, atMs)
local merged = math.min(own, levelAt(atLeast, atMs))
local scaledTokens = math.min(capacity, merged - delta * windowMs)
if scaledTokens == own then
  return {0}
end
store(string.format('%d:%d', scaledTokens, atMs), fullAt(scaledTokens, atMs))
return {1}
`);

export function formatTokenBucketValue(state: TokenBucketState): string {
  return `${state.scaledTokens}:${state.updatedAtMs}`;
}

export function parseTokenBucketValue(value: string | null): TokenBucketState | null {
  const match = value === null ? null : /^(-?\d+):(\d+)$/.exec(value);
  return match === null ? null : { scaledTokens: Number(match[1]), updatedAtMs: Number(match[2]) };
}
