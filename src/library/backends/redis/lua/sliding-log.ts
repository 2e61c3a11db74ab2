import type { SlidingLogState } from '../../../window/sliding-log';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `slidingLog` (algorithms/sliding-log.ts), decide and adjust,
 * called as twin-protocol.ts describes. The value is the entries as
 * "timestampMs:units" joined by commas, oldest first ("" is an empty log; an
 * adjustment that empties the log deletes the key instead). A compact string
 * rather than cjson: cjson writes numbers with 14 significant digits.
 * test/integration/algorithm-lua-twins.test.ts holds the two together.
 */
export const SLIDING_LOG_TWIN = luaTwin(`
local function parse(raw)
  if not raw then
    return nil
  end
  local entries = {}
  if raw == '' then
    return entries
  end
  if string.find(raw, ',,', 1, true) or string.sub(raw, 1, 1) == ',' or string.sub(raw, -1) == ',' then
    return nil
  end
  local last = -1
  for item in string.gmatch(raw, '[^,]+') do
    local t, u = string.match(item, '^(%d+):(%d+)$')
    if not t then
      return nil
    end
    t = tonumber(t)
    u = tonumber(u)
    if u < 1 or t <= last then
      return nil
    end
    last = t
    entries[#entries + 1] = {t, u}
  end
  return entries
end

local function format(entries)
  local parts = {}
  for i, e in ipairs(entries) do
    parts[i] = string.format('%d:%d', e[1], e[2])
  end
  return table.concat(parts, ',')
end

local function lastTimestamp(entries)
  if entries and #entries > 0 then
    return entries[#entries][1]
  end
  return 0
end

local function live(entries, atMs)
  local out = {}
  if entries then
    for _, e in ipairs(entries) do
      if e[1] > atMs - windowMs then
        out[#out + 1] = {e[1], e[2]}
      end
    end
  end
  return out
end

local function total(entries)
  local sum = 0
  for _, e in ipairs(entries) do
    sum = sum + e[2]
  end
  return sum
end

local function resetAt(entries, effectiveNowMs)
  if #entries > 0 then
    return entries[#entries][1] + windowMs
  end
  return effectiveNowMs
end

local function append(entries, atMs, units)
  local n = #entries
  if n > 0 and entries[n][1] == atMs then
    entries[n] = {atMs, entries[n][2] + units}
  else
    entries[n + 1] = {atMs, units}
  end
  return entries
end

local state = parse(redis.call('GET', KEYS[1]))

if mode == 'decide' then
  local cost = amount
  local effectiveNowMs = math.max(nowMs, lastTimestamp(state))
  local entries = live(state, effectiveNowMs)
  local spent = total(entries)
  local allowed = cost == 0 or spent + cost <= limit
  if allowed and cost > 0 then
    entries = append(entries, effectiveNowMs, cost)
  end
  local resetAtMs = resetAt(entries, effectiveNowMs)
  local retryAfterMs = 0
  if not allowed and cost > limit then
    retryAfterMs = math.max(1, resetAtMs - nowMs)
  elseif not allowed then
    local left = spent
    for _, e in ipairs(entries) do
      left = left - e[2]
      if left + cost <= limit then
        retryAfterMs = e[1] + windowMs - nowMs
        break
      end
    end
  end
  local remaining = math.max(0, limit - total(entries))
  if allowed and cost > 0 then
    store(format(entries), resetAtMs)
  end
  return reply(allowed, remaining, resetAtMs, retryAfterMs)
end

-- adjust
local delta = amount
local atLeast = parse(atLeastRaw)
local effectiveNowMs = math.max(nowMs, lastTimestamp(state), lastTimestamp(atLeast))
local own = live(state, effectiveNowMs)
local theirs = live(atLeast, effectiveNowMs)

-- Suffix maxima: from every timestamp on, as many units as the more spent log.
local times = {}
local seen = {}
for _, list in ipairs({own, theirs}) do
  for _, e in ipairs(list) do
    if not seen[e[1]] then
      seen[e[1]] = true
      times[#times + 1] = e[1]
    end
  end
end
table.sort(times)
local reversed = {}
local ia, ib = #own, #theirs
local suffixA, suffixB, merged = 0, 0, 0
for i = #times, 1, -1 do
  local t = times[i]
  while ia >= 1 and own[ia][1] >= t do
    suffixA = suffixA + own[ia][2]
    ia = ia - 1
  end
  while ib >= 1 and theirs[ib][1] >= t do
    suffixB = suffixB + theirs[ib][2]
    ib = ib - 1
  end
  local nextTotal = math.max(suffixA, suffixB)
  if nextTotal > merged then
    reversed[#reversed + 1] = {t, nextTotal - merged}
  end
  merged = nextTotal
end
local entries = {}
for i = #reversed, 1, -1 do
  entries[#entries + 1] = reversed[i]
end

if delta > 0 then
  entries = append(entries, effectiveNowMs, delta)
elseif delta < 0 then
  local owed = -delta
  while owed > 0 and #entries > 0 do
    local e = entries[#entries]
    if e[2] > owed then
      entries[#entries] = {e[1], e[2] - owed}
      owed = 0
    else
      entries[#entries] = nil
      owed = owed - e[2]
    end
  end
end

-- At most limit entries: fold the oldest into the next (later never frees capacity).
if #entries > limit then
  local extra = #entries - limit
  local folded = 0
  for i = 1, extra do
    folded = folded + entries[i][2]
  end
  local kept = {}
  kept[1] = {entries[extra + 1][1], entries[extra + 1][2] + folded}
  for i = extra + 2, #entries do
    kept[#kept + 1] = entries[i]
  end
  entries = kept
end

local same = #entries == #own
if same then
  for i, e in ipairs(entries) do
    if own[i][1] ~= e[1] or own[i][2] ~= e[2] then
      same = false
      break
    end
  end
end
if same then
  return {0}
end
if #entries == 0 then
  remove()
else
  store(format(entries), entries[#entries][1] + windowMs)
end
return {1}
`);

export function formatSlidingLogValue(state: SlidingLogState): string {
  return state.entries.map(([t, units]) => `${t}:${units}`).join(',');
}

export function parseSlidingLogValue(value: string | null): SlidingLogState | null {
  if (value === null) return null;
  if (value === '') return { entries: [] };
  const entries: [number, number][] = [];
  for (const item of value.split(',')) {
    const match = /^(\d+):(\d+)$/.exec(item);
    if (match === null) return null;
    const t = Number(match[1]);
    const units = Number(match[2]);
    const last = entries[entries.length - 1];
    if (units < 1 || (last !== undefined && t <= last[0])) return null;
    entries.push([t, units]);
  }
  return { entries };
}
