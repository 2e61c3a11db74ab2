import type { SlidingLogState } from '../../../window/sliding-log';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `slidingLog` (algorithms/sliding-log.ts), decide and adjust,
 * called as twin-protocol.ts describes. The value is packed (issue 22: a full
 * log of 1,000 took 16 KB): "~" then the entries oldest first, joined by
 * commas, each the ms since the entry before it (the first: its timestamp),
 * then ":units" when units is not 1, all decimal (`~1764000000000,60,61:2`);
 * "" is an empty log, and an adjustment that empties the log deletes the key
 * instead. The unpacked form before it, "timestampMs:units" joined by commas,
 * is still read, so a key written by an older release keeps its count.
 * Decimal rather than cjson (14 significant digits) or binary (the values
 * travel as strings). The log is held in two arrays (timestamps, units), not
 * a table per entry. test/integration/algorithm-lua-twins.test.ts holds the
 * two together.
 */

/** Statements: new locals `ts`, `us` (arrays) and `len` of the log in `source`; ts nil when there is none or it is junk. */
function parseLog(source: string, ts: string, us: string, len: string): string {
  return `local ${ts}, ${us}, ${len} = nil, nil, 0
if ${source} then
  local packed = ${source}
  local deltas = string.sub(packed, 1, 1) == '~'
  local valid = true
  if deltas then
    packed = string.sub(packed, 2)
    valid = packed ~= ''
  end
  ${ts}, ${us} = {}, {}
  if valid and packed ~= '' then
    if string.find(packed, ',,', 1, true) or string.sub(packed, 1, 1) == ',' or string.sub(packed, -1) == ',' then
      valid = false
    end
    local last = -1
    if valid then
      for item in string.gmatch(packed, '[^,]+') do
        local t, u = string.match(item, '^(%d+):(%d+)$')
        if deltas and not t then
          t = string.match(item, '^(%d+)$')
          u = '1'
        end
        if not t then
          valid = false
          break
        end
        t = tonumber(t)
        u = tonumber(u)
        if deltas and ${len} > 0 then
          t = last + t
        end
        if u < 1 or t <= last or t > 9007199254740991 then
          valid = false
          break
        end
        last = t
        ${len} = ${len} + 1
        ${ts}[${len}] = t
        ${us}[${len}] = u
      end
    end
  end
  if not valid then
    ${ts}, ${us}, ${len} = nil, nil, 0
  end
end`;
}

/** Statements: a new local `first`, the index of the oldest entry of (ts, len) still counting at `atMs` (len + 1: none). */
function firstLive(first: string, ts: string, len: string, atMs: string): string {
  return `local ${first} = 1
while ${first} <= ${len} and ${ts}[${first}] <= ${atMs} - windowMs do
  ${first} = ${first} + 1
end`;
}

/** Statements setting wValue to entries `from`..`to` of (ts, us), packed. */
function packInto(ts: string, us: string, from: string, to: string): string {
  return `do
  local parts = {}
  local previous = nil
  for j = ${from}, ${to} do
    local d = ${ts}[j]
    if previous then
      d = ${ts}[j] - previous
    end
    previous = ${ts}[j]
    if ${us}[j] == 1 then
      parts[#parts + 1] = string.format('%d', d)
    else
      parts[#parts + 1] = string.format('%d:%d', d, ${us}[j])
    end
  end
  wValue = '~' .. table.concat(parts, ',')
end`;
}

export const SLIDING_LOG_TWIN = luaTwin(`
${parseLog('raw', 'ts', 'us', 'len')}

if mode == 'decide' then
  local cost = amount
  local effectiveNowMs = nowMs
  if len > 0 and ts[len] > effectiveNowMs then
    effectiveNowMs = ts[len]
  end
${firstLive('first', 'ts', 'len', 'effectiveNowMs')}
  local spent = 0
  for j = first, len do
    spent = spent + us[j]
  end
  local allowed = cost == 0 or spent + cost <= limit
  local total = spent
  if allowed and cost > 0 then
    total = spent + cost
    if len >= first and ts[len] == effectiveNowMs then
      us[len] = us[len] + cost
    else
      if not ts then
        ts, us = {}, {}
      end
      len = len + 1
      ts[len] = effectiveNowMs
      us[len] = cost
    end
  end
  local resetAtMs = effectiveNowMs
  if len >= first then
    resetAtMs = ts[len] + windowMs
  end
  local retryAfterMs = 0
  if not allowed and cost > limit then
    retryAfterMs = math.max(1, resetAtMs - nowMs)
  elseif not allowed then
    -- The call fits once enough of the oldest entries have left.
    local left = spent
    for j = first, len do
      left = left - us[j]
      if left + cost <= limit then
        retryAfterMs = ts[j] + windowMs - nowMs
        break
      end
    end
  end
  rAllowed = allowed
  rRemaining = math.max(0, limit - total)
  rResetAtMs = resetAtMs
  rRetryAfterMs = retryAfterMs
  if allowed and cost > 0 then
${packInto('ts', 'us', 'first', 'len')}
    wExpiresAtMs = resetAtMs
  end
else
  local delta = amount
${parseLog('atLeastRaw', 'kts', 'kus', 'klen')}
  local effectiveNowMs = nowMs
  if len > 0 and ts[len] > effectiveNowMs then
    effectiveNowMs = ts[len]
  end
  if klen > 0 and kts[klen] > effectiveNowMs then
    effectiveNowMs = kts[klen]
  end
${firstLive('first', 'ts', 'len', 'effectiveNowMs')}
${firstLive('kfirst', 'kts', 'klen', 'effectiveNowMs')}

  -- Suffix maxima, newest first: from every timestamp of either log on, as many units as the more
  -- spent log. Walking both (sorted) logs backwards visits each distinct timestamp once, in order.
  local rts, rus, rlen = {}, {}, 0
  local ia, ib = len, klen
  local suffixA, suffixB, merged = 0, 0, 0
  while ia >= first or ib >= kfirst do
    local t = nil
    if ia >= first then
      t = ts[ia]
    end
    if ib >= kfirst and (not t or kts[ib] > t) then
      t = kts[ib]
    end
    while ia >= first and ts[ia] >= t do
      suffixA = suffixA + us[ia]
      ia = ia - 1
    end
    while ib >= kfirst and kts[ib] >= t do
      suffixB = suffixB + kus[ib]
      ib = ib - 1
    end
    local nextTotal = math.max(suffixA, suffixB)
    if nextTotal > merged then
      rlen = rlen + 1
      rts[rlen] = t
      rus[rlen] = nextTotal - merged
    end
    merged = nextTotal
  end
  local ets, eus, elen = {}, {}, rlen
  for j = 1, rlen do
    ets[j] = rts[rlen + 1 - j]
    eus[j] = rus[rlen + 1 - j]
  end

  if delta > 0 then
    if elen > 0 and ets[elen] == effectiveNowMs then
      eus[elen] = eus[elen] + delta
    else
      elen = elen + 1
      ets[elen] = effectiveNowMs
      eus[elen] = delta
    end
  elseif delta < 0 then
    local owed = -delta
    while owed > 0 and elen > 0 do
      if eus[elen] > owed then
        eus[elen] = eus[elen] - owed
        owed = 0
      else
        owed = owed - eus[elen]
        ets[elen] = nil
        eus[elen] = nil
        elen = elen - 1
      end
    end
  end

  -- At most limit entries: fold the oldest into the next (later never frees capacity).
  local efirst = 1
  if elen > limit then
    efirst = elen - limit + 1
    for j = 1, efirst - 1 do
      eus[efirst] = eus[efirst] + eus[j]
    end
  end

  local same = elen - efirst + 1 == len - first + 1
  if same then
    for j = 0, elen - efirst do
      if ets[efirst + j] ~= ts[first + j] or eus[efirst + j] ~= us[first + j] then
        same = false
        break
      end
    end
  end
  if not same then
    if elen < efirst then
      wValue = false
    else
${packInto('ets', 'eus', 'efirst', 'elen')}
      wExpiresAtMs = ets[elen] + windowMs
    end
  end
end
`);

/** The packed value (see SLIDING_LOG_TWIN): "" for an empty log. */
export function formatSlidingLogValue(state: SlidingLogState): string {
  if (state.entries.length === 0) return '';
  let packed = '~';
  let previous: number | undefined;
  for (const [t, units] of state.entries) {
    if (previous !== undefined) packed += ',';
    packed += String(previous === undefined ? t : t - previous);
    if (units !== 1) packed += `:${units}`;
    previous = t;
  }
  return packed;
}

/** Reads the packed value and the unpacked form older releases wrote; junk is null. */
export function parseSlidingLogValue(value: string | null): SlidingLogState | null {
  if (value === null) return null;
  if (value === '') return { entries: [] };
  const deltas = value.startsWith('~');
  const packed = deltas ? value.slice(1) : value;
  if (packed === '') return null;
  const entries: [number, number][] = [];
  for (const item of packed.split(',')) {
    const match = (deltas ? /^(\d+)(?::(\d+))?$/ : /^(\d+):(\d+)$/).exec(item);
    if (match === null) return null;
    const last = entries[entries.length - 1];
    const t = deltas && last !== undefined ? last[0] + Number(match[1]) : Number(match[1]);
    const units = match[2] === undefined ? 1 : Number(match[2]);
    if (units < 1 || (last !== undefined && t <= last[0]) || t > Number.MAX_SAFE_INTEGER) return null;
    entries.push([t, units]);
  }
  return { entries };
}
