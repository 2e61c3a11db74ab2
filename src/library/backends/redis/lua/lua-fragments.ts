/**
 * Lua more than one script in this folder needs, written once so a fix to one
 * reaches every script that runs it: constants pasted in as local functions
 * (for the scripts that still have them), and generators of Lua text for what
 * the hot path cannot afford to call. The
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
 * Lua statements declaring the new locals `names`, one integer field each of
 * `source` (a Lua expression: a string, or nil/false for no value) matched
 * whole by `pattern` (one capture a field); all nil when there is no value or
 * it does not match. Statements, not a shared parse function: every function
 * literal a script runs is a new closure on every call, and the set script took
 * 4-10% more Redis time per decision with a generic parse and a latestWindow
 * function, and more again with each twin's own helpers (issue 22).
 */
export function luaParseIntegers(source: string, pattern: string, names: readonly string[]): string {
  const captures = names.map((_, i) => `f${i + 1}`);
  if (pattern.split('(').length - 1 !== names.length) throw new Error(`luaParseIntegers: ${names.length} names for the captures of ${pattern}`);
  return [
    `local ${names.join(', ')}`,
    `if ${source} then`,
    `  local ${captures.join(', ')} = string.match(${source}, '${pattern}')`,
    '  if f1 then',
    ...names.map((name, i) => `    ${name} = tonumber(${captures[i] as string})`),
    '  end',
    'end',
  ].join('\n');
}

/**
 * Lua statements setting a new local `n` to the window a window twin counts
 * in: now's, or a newer one any of `windowNumbers` (each a local holding a
 * state's window number, or nil) has reached, so a clock behind the last
 * writer's never opens an older window. `indent` prefixes every line.
 */
export function luaLatestWindow(windowNumbers: readonly string[], indent = ''): string {
  const lines = ['local n = math.floor(nowMs / windowMs)', ...windowNumbers.flatMap((w) => [`if ${w} and ${w} > n then`, `  n = ${w}`, 'end'])];
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

/** Lua statements setting `target` (an existing variable) to ms + rem / divisor rounded up to whole ms: ceilMs, inline. */
export function luaCeilMsInto(target: string, ms: string, rem: string): string {
  return [`${target} = ${ms}`, `if ${rem} > 0 then`, `  ${target} = ${ms} + 1`, 'end'].join('\n');
}
