/**
 * Lua functions more than one script in this folder needs, written once so a
 * fix to one reaches every script that runs it. Each is pasted into a script
 * (or a twin's body) as a local function; the names it reads (`nowMs`,
 * `windowMs`, `ttlMarginMs`) are the script's own locals of those names.
 */

/**
 * A write's TTL in ms: expiresAtMs − nowMs + ttlMarginMs, at least 1. Relative
 * to the caller's clock, so Redis's own clock never decides an expiry.
 */
export const LUA_TTL_UNTIL = `
local function ttlUntil(expiresAtMs)
  local ttl = expiresAtMs - nowMs + ttlMarginMs
  if ttl < 1 then
    ttl = 1
  end
  return ttl
end
`.trim();

/**
 * A compact value whose fields are all integers, as the numbers `pattern`
 * captures, or nil for no value or one that does not match.
 */
export const LUA_PARSE_INTEGERS = `
local function parseIntegers(raw, pattern)
  if not raw then
    return nil
  end
  local fields = {string.match(raw, pattern)}
  if #fields == 0 then
    return nil
  end
  for i, field in ipairs(fields) do
    fields[i] = tonumber(field)
  end
  return fields
end
`.trim();

/**
 * The window a window algorithm counts in: now's, or a newer one a state
 * (field 1, its window number) has reached, so a clock behind the last
 * writer's never opens an older window. Either state may be nil.
 */
export const LUA_LATEST_WINDOW = `
local function latestWindow(s, t)
  local n = math.floor(nowMs / windowMs)
  if s and s[1] > n then
    n = s[1]
  end
  if t and t[1] > n then
    n = t[1]
  end
  return n
end
`.trim();

/** An exact time ms + rem / divisor (0 ≤ rem < divisor), rounded up to whole ms. */
export const LUA_CEIL_MS = `
local function ceilMs(ms, rem)
  if rem > 0 then
    return ms + 1
  end
  return ms
end
`.trim();
