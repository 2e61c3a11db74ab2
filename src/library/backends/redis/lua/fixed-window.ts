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
${luaParseIntegers('raw', '^(%d+):(%d+)$', ['stateWindow', 'stateCount'])}

if mode == 'decide' then
  local cost = amount
${luaLatestWindow(['stateWindow'], '  ')}
  local spent = 0
  if stateWindow == n then
    spent = stateCount
  end
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
  rAllowed = allowed
  rRemaining = remaining
  rResetAtMs = resetAtMs
  rRetryAfterMs = 0
  if not allowed then
    rRetryAfterMs = resetAtMs - nowMs
  end
  if allowed and cost > 0 then
    wValue = string.format('%d:%d', n, count)
    wExpiresAtMs = resetAtMs
  end
else
  local delta = amount
${luaParseIntegers('atLeastRaw', '^(%d+):(%d+)$', ['knownWindow', 'knownCount'])}
${luaLatestWindow(['stateWindow', 'knownWindow'], '  ')}
  local spent = 0
  if stateWindow == n then
    spent = stateCount
  end
  local known = 0
  if knownWindow == n then
    known = knownCount
  end
  local count = math.max(spent, known) + delta
  if count < 0 then
    count = 0
  end
  if count ~= spent then
    wValue = string.format('%d:%d', n, count)
    wExpiresAtMs = (n + 1) * windowMs
  end
end
`);

export function formatFixedWindowValue(state: FixedWindowState): string {
  return `${state.windowNumber}:${state.count}`;
}

export function parseFixedWindowValue(value: string | null): FixedWindowState | null {
  const match = value === null ? null : /^(\d+):(\d+)$/.exec(value);
  return match === null ? null : { windowNumber: Number(match[1]), count: Number(match[2]) };
}
