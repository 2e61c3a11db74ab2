/**
 * Lua more than one script in this folder needs, written once so a fix to one
 * reaches every script that runs it: constants pasted in as local functions,
 * and generators of Lua text for what the hot path cannot afford to call. The
 * names the Lua reads (`nowMs`, `windowMs`, `ttlMarginMs`) are the script's
 * own locals of those names.
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
 * The Lua of a twin's `local function parse(raw)`: a compact value of integer
 * fields, matched whole by `pattern` (one capture a field), as a table of
 * numbers, or nil for no value or one that does not match.
 *
 * This and `luaLatestWindow` write their Lua out into each twin instead of
 * adding shared Lua functions: every function literal a script runs is a new
 * closure on every call, and the set script took 4-10% more Redis time per
 * decision with a generic parseIntegers and a latestWindow function.
 */
export function luaParseIntegers(pattern: string): string {
  const names = Array.from({ length: pattern.split('(').length - 1 }, (_, i) => `f${i + 1}`);
  return [
    'local function parse(raw)',
    '  if not raw then',
    '    return nil',
    '  end',
    `  local ${names.join(', ')} = string.match(raw, '${pattern}')`,
    '  if not f1 then',
    '    return nil',
    '  end',
    `  return {${names.map((name) => `tonumber(${name})`).join(', ')}}`,
    'end',
  ].join('\n');
}

/**
 * Lua statements setting a new local `n` to the window a window twin counts
 * in: now's, or a newer one any of `states` (each a state whose field 1 is a
 * window number, or nil) has reached, so a clock behind the last writer's
 * never opens an older window. `indent` prefixes every line.
 */
export function luaLatestWindow(states: readonly string[], indent = ''): string {
  const lines = ['local n = math.floor(nowMs / windowMs)', ...states.flatMap((s) => [`if ${s} and ${s}[1] > n then`, `  n = ${s}[1]`, 'end'])];
  return lines.map((line) => indent + line).join('\n');
}

/** An exact time ms + rem / divisor (0 ≤ rem < divisor), rounded up to whole ms. */
export const LUA_CEIL_MS = `
local function ceilMs(ms, rem)
  if rem > 0 then
    return ms + 1
  end
  return ms
end
`.trim();
