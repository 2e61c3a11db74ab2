import type { SlidingWindowState } from '../../../window/sliding-window';
import { luaLatestWindow, luaParseIntegers } from './lua-fragments';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `slidingWindow` (algorithms/sliding-window.ts), decide and
 * adjust, called as twin-protocol.ts describes. The value is
 * "windowNumber:count:previousCount". Same integer arithmetic, line for line;
 * test/integration/algorithm-lua-twins.test.ts holds the two together.
 */
/** Statements: new locals `count`, `previous` of a state (its window, count and previous count locals) rolled to window `n`. */
function rolled(state: readonly [window: string, count: string, previous: string], count: string, previous: string): string {
  const [w, c, p] = state;
  return `local ${count}, ${previous} = 0, 0
if ${w} then
  if ${w} == n then
    ${count} = ${c}
    ${previous} = ${p}
  elseif ${w} == n - 1 then
    ${previous} = ${c}
  end
end`;
}

/** The expression of the units that still fit at `elapsed` into window n. */
function room(count: string, previous: string, elapsed: string): string {
  return `math.floor((limit * windowMs - ${previous} * (windowMs - ${elapsed}) - ${count} * windowMs) / windowMs)`;
}

const STATE = ['stateWindow', 'stateCount', 'statePrevious'] as const;
const KNOWN = ['knownWindow', 'knownCount', 'knownPrevious'] as const;
const PATTERN = '^(%d+):(%d+):(%d+)$';

export const SLIDING_WINDOW_TWIN = luaTwin(`
${luaParseIntegers('raw', PATTERN, STATE)}

if mode == 'decide' then
  local cost = amount
${luaLatestWindow([STATE[0]], '  ')}
  local effectiveNowMs = math.max(nowMs, n * windowMs)
  local elapsed = effectiveNowMs - n * windowMs
${rolled(STATE, 'count', 'previousCount')}
  local allowed = cost == 0 or (cost <= limit and ${room('count', 'previousCount', 'elapsed')} >= cost)
  local spent = count
  if allowed then
    spent = count + cost
  end
  local resetAtMs = effectiveNowMs
  if spent > 0 then
    resetAtMs = (n + 2) * windowMs
  elseif previousCount > 0 then
    resetAtMs = (n + 1) * windowMs
  end
  local retryAfterMs = 0
  if not allowed then
    if cost > limit then
      retryAfterMs = math.max(1, resetAtMs - nowMs)
    else
      -- The earliest time the call fits: this window, the next, or the one after.
      local fitAtMs = nil
      local slack = limit - count - cost
      if slack >= 0 then
        if previousCount == 0 then
          fitAtMs = n * windowMs + elapsed
        else
          local x = math.max(elapsed, windowMs - math.floor((slack * windowMs) / previousCount))
          if x < windowMs then
            fitAtMs = n * windowMs + x
          end
        end
      end
      if not fitAtMs then
        if count == 0 then
          fitAtMs = (n + 1) * windowMs
        else
          local y = math.max(0, windowMs - math.floor(((limit - cost) * windowMs) / count))
          if y < windowMs then
            fitAtMs = (n + 1) * windowMs + y
          else
            fitAtMs = (n + 2) * windowMs
          end
        end
      end
      retryAfterMs = fitAtMs - nowMs
    end
  end
  rAllowed = allowed
  rRemaining = math.max(0, ${room('spent', 'previousCount', 'elapsed')})
  rResetAtMs = resetAtMs
  rRetryAfterMs = retryAfterMs
  if allowed and cost > 0 then
    wValue = string.format('%d:%d:%d', n, spent, previousCount)
    wExpiresAtMs = resetAtMs
  end
else
  local delta = amount
${luaParseIntegers('atLeastRaw', PATTERN, KNOWN)}
${luaLatestWindow([STATE[0], KNOWN[0]])}
${rolled(STATE, 'ownCount', 'ownPrevious')}
${rolled(KNOWN, 'knownCountNow', 'knownPreviousNow')}
  local mergedCount = math.max(ownCount, knownCountNow) + delta
  local count = math.max(0, mergedCount)
  local previousCount = math.max(0, math.max(ownPrevious, knownPreviousNow) + math.min(0, mergedCount))
  if count ~= ownCount or previousCount ~= ownPrevious then
    wValue = string.format('%d:%d:%d', n, count, previousCount)
    wExpiresAtMs = (n + 1) * windowMs
    if count > 0 then
      wExpiresAtMs = (n + 2) * windowMs
    end
  end
end
`);

export function formatSlidingWindowValue(state: SlidingWindowState): string {
  return `${state.windowNumber}:${state.count}:${state.previousCount}`;
}

export function parseSlidingWindowValue(value: string | null): SlidingWindowState | null {
  const match = value === null ? null : /^(\d+):(\d+):(\d+)$/.exec(value);
  return match === null ? null : { windowNumber: Number(match[1]), count: Number(match[2]), previousCount: Number(match[3]) };
}
