import { createHash } from 'node:crypto';
import type { UpstreamPolicy } from '../../../schedule/upstream-policy';
import type { UpstreamOutcome, UpstreamRejection } from '../../../schedule/upstream-schedule';
import { formatUpstreamState, parseUpstreamState, type UpstreamState } from '../../../schedule/upstream-state';
import { LUA_CEIL_MS, LUA_TTL_UNTIL } from './lua-fragments';

/**
 * The Lua twin of scheduleUpstream (upstream/upstream-schedule.ts): the same
 * parse of the compact state (upstream/upstream-state.ts), the same integer
 * arithmetic, line for line. test/integration/upstream-lua-twin.test.ts holds
 * the two together with the shared vectors and a random-sequence property.
 *
 * KEYS[1]  the quota key; its value is the compact state
 * ARGV     nowMs, holder, limit, windowMs, headroomBp, maxWaitMs, dailyBudget,
 *          graceMs, maxReservations, ttlMarginMs, restore (a compact state to
 *          start from when the key holds none that parses; '' for none),
 *          maxReservationsPerHolder, claimSlotAtMs ('' for none)
 * Reply    {status, detail, slotAtMs, retryAfterMs, value after ('' for none)}
 *          status 0 run (detail 1 = claimed, slotAtMs the claimed slot),
 *          1 reserved, 2 rejected (detail: 1 daily_budget, 2 max_wait,
 *          3 reservations_full, 4 token_reservations_full)
 *
 * A write's TTL is upstreamStateExpiresAtMs − nowMs + ttlMarginMs (relative
 * to the caller's clock, as every twin's is), at least 1 ms.
 */
export const UPSTREAM_SCHEDULE_SCRIPT = `
local nowMs = tonumber(ARGV[1])
local holder = ARGV[2]
local limit = tonumber(ARGV[3])
local windowMs = tonumber(ARGV[4])
local headroomBp = tonumber(ARGV[5])
local maxWaitMs = tonumber(ARGV[6])
local dailyBudget = tonumber(ARGV[7])
local graceMs = tonumber(ARGV[8])
local maxReservations = tonumber(ARGV[9])
local ttlMarginMs = tonumber(ARGV[10])
local maxPerHolder = tonumber(ARGV[12])
local claimSlotAtMs = tonumber(ARGV[13])
local DAY_MS = 86400000
local numerator = windowMs * 10000
local denominator = limit * headroomBp

local function whole(digits)
  if not digits or #digits > 16 then
    return nil
  end
  local n = tonumber(digits)
  if n > 9007199254740991 then
    return nil
  end
  return n
end

local function split(raw)
  local parts = {}
  local pos = 1
  while true do
    local at = string.find(raw, ',', pos, true)
    if not at then
      parts[#parts + 1] = string.sub(raw, pos)
      return parts
    end
    parts[#parts + 1] = string.sub(raw, pos, at - 1)
    pos = at + 1
  end
end

local function parse(raw)
  if not raw then
    return nil
  end
  local parts = split(raw)
  local a, b, c, d = string.match(parts[1], '^(%d+):(%d+):(%d+):(%d+)$')
  local s = {cursorMs = whole(a), cursorRem = whole(b), day = whole(c), count = whole(d), reservations = {}}
  if not (s.cursorMs and s.cursorRem and s.day and s.count) then
    return nil
  end
  for i = 2, #parts do
    local h, slot = string.match(parts[i], '^([%w_%-]+):(%d+)$')
    local slotAtMs = whole(slot)
    if not h or #h > 64 or not slotAtMs then
      return nil
    end
    s.reservations[#s.reservations + 1] = {h, slotAtMs}
  end
  return s
end

local function format(s)
  local out = {string.format('%d:%d:%d:%d', s.cursorMs, s.cursorRem, s.day, s.count)}
  for _, r in ipairs(s.reservations) do
    out[#out + 1] = string.format('%s:%d', r[1], r[2])
  end
  return table.concat(out, ',')
end

local function afterOneInterval(ms, rem)
  local r = rem + numerator
  local carry = math.floor(r / denominator)
  return ms + carry, r - carry * denominator
end

${LUA_CEIL_MS}

local function dayOf(ms)
  return math.floor(ms / DAY_MS)
end

local function expiresAtMs(s)
  local at = ceilMs(s.cursorMs, s.cursorRem)
  for _, r in ipairs(s.reservations) do
    at = math.max(at, r[2] + graceMs + 1)
  end
  if dailyBudget > 0 and s.count > 0 then
    at = math.max(at, (s.day + 1) * DAY_MS)
  end
  return at
end

local raw = redis.call('GET', KEYS[1])
local s = parse(raw)
if not s and ARGV[11] ~= '' then
  raw = ARGV[11]
  s = parse(raw)
end
if not s then
  s = {cursorMs = 0, cursorRem = 0, day = 0, count = 0, reservations = {}}
end

${LUA_TTL_UNTIL}

local function write(next)
  local value = format(next)
  redis.call('SET', KEYS[1], value, 'PX', string.format('%d', ttlUntil(expiresAtMs(next))))
  return value
end

local function current()
  if raw then
    return raw
  end
  return ''
end

local live = {}
local count = s.count
local claimed = nil
local due = nil
local mineCount = 0
local oldestMine = nil
for _, r in ipairs(s.reservations) do
  if nowMs <= r[2] + graceMs then
    live[#live + 1] = r
    if r[1] == holder then
      mineCount = mineCount + 1
      if oldestMine == nil then
        oldestMine = r[2]
      end
      if claimed == nil and r[2] == claimSlotAtMs then
        claimed = #live
      end
      if due == nil and r[2] <= nowMs then
        due = #live
      end
    end
  elseif dayOf(r[2]) == s.day and count > 0 then
    count = count - 1
  end
end
local mine = claimed or due

-- What a call that grants nothing writes: the lapses it saw, or nothing.
local function lapsed()
  if #live == #s.reservations then
    return current()
  end
  return write({cursorMs = s.cursorMs, cursorRem = s.cursorRem, day = s.day, count = count, reservations = live})
end

if mine then
  local slotAtMs = live[mine][2]
  if nowMs < slotAtMs then
    return {1, 0, slotAtMs, slotAtMs - nowMs, lapsed()}
  end
  table.remove(live, mine)
  return {0, 1, slotAtMs, 0, write({cursorMs = s.cursorMs, cursorRem = s.cursorRem, day = s.day, count = count, reservations = live})}
end

local slotAtMs = math.max(ceilMs(s.cursorMs, s.cursorRem), nowMs)
local slotDay = dayOf(slotAtMs)
local day = math.max(slotDay, s.day)
local spent = count
if slotDay > s.day then
  spent = 0
end
local waitMs = slotAtMs - nowMs

if dailyBudget > 0 and spent >= dailyBudget then
  return {2, 1, 0, (day + 1) * DAY_MS - nowMs, lapsed()}
end
if waitMs > maxWaitMs then
  return {2, 2, 0, waitMs - maxWaitMs, lapsed()}
end
if waitMs == 0 then
  local cm, cr = afterOneInterval(nowMs, 0)
  return {0, 0, nowMs, 0, write({cursorMs = cm, cursorRem = cr, day = day, count = spent + 1, reservations = live})}
end
if oldestMine and mineCount >= maxPerHolder then
  return {2, 4, 0, math.max(1, oldestMine - nowMs), lapsed()}
end
if #live > 0 and #live >= maxReservations then
  return {2, 3, 0, math.max(1, live[1][2] + graceMs + 1 - nowMs), lapsed()}
end
local cm, cr = afterOneInterval(slotAtMs + graceMs, 0)
live[#live + 1] = {holder, slotAtMs}
return {1, 0, slotAtMs, waitMs, write({cursorMs = cm, cursorRem = cr, day = day, count = spent + 1, reservations = live})}
`.trim();

export const UPSTREAM_SCHEDULE_SHA1 = createHash('sha1').update(UPSTREAM_SCHEDULE_SCRIPT).digest('hex');

/** The default margin added to every TTL, as the limit stores do. */
export const DEFAULT_UPSTREAM_TTL_MARGIN_MS = 10_000;

export function upstreamScheduleArgs(
  nowMs: number,
  holder: string,
  policy: UpstreamPolicy,
  ttlMarginMs = DEFAULT_UPSTREAM_TTL_MARGIN_MS,
  restore: UpstreamState | null = null,
  claimSlotAtMs: number | null = null,
): string[] {
  const args = [nowMs, holder, policy.limit, policy.windowMs, policy.headroomBp, policy.maxWaitMs, policy.dailyBudget, policy.graceMs, policy.maxReservations, ttlMarginMs].map(String);
  return [...args, restore === null ? '' : formatUpstreamState(restore), String(policy.maxReservationsPerHolder), claimSlotAtMs === null ? '' : String(claimSlotAtMs)];
}

const REJECTIONS: readonly UpstreamRejection[] = ['daily_budget', 'max_wait', 'reservations_full', 'token_reservations_full'];

/** The twin's reply as an outcome and the state after; a malformed reply throws a TypeError. */
export function scheduledFromReply(reply: unknown): { outcome: UpstreamOutcome; state: UpstreamState | null } {
  if (!Array.isArray(reply) || reply.length !== 5 || !reply.slice(0, 4).every((n) => typeof n === 'number') || typeof reply[4] !== 'string') {
    throw new TypeError(`unexpected reply from the upstream schedule script: ${JSON.stringify(reply)}`);
  }
  const [status, detail, slotAtMs, retryAfterMs, value] = reply as [number, number, number, number, string];
  const state = value === '' ? null : parseUpstreamState(value);
  if (status === 0) return { outcome: detail === 1 ? { status: 'run', claimed: true, slotAtMs } : { status: 'run', claimed: false }, state };
  if (status === 1) return { outcome: { status: 'reserved', slotAtMs, retryAfterMs }, state };
  const reason = REJECTIONS[detail - 1];
  if (status !== 2 || reason === undefined) throw new TypeError(`unexpected reply from the upstream schedule script: ${JSON.stringify(reply)}`);
  return { outcome: { status: 'rejected', reason, retryAfterMs }, state };
}
