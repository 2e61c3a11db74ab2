import { createHash } from 'node:crypto';
import type { UpstreamPolicy } from '../../../schedule/upstream-policy';
import type { UpstreamOutcome, UpstreamRejection } from '../../../schedule/upstream-schedule';
import { formatUpstreamState, parseUpstreamState, type UpstreamState } from '../../../schedule/upstream-state';
import { LUA_CEIL_MS, LUA_TTL_UNTIL } from './lua-fragments';

/** The most reservations a reply lists: a view, so that no call's cost grows with the number held. */
export const UPSTREAM_VIEW_LIMIT = 16;

/** The keys of one quota: the head, then its reservations by slot and by holder (same prefix, so one hash tag). */
export function upstreamScheduleKeys(key: string): [string, string, string] {
  return [key, `${key}:r`, `${key}:h`];
}

/**
 * The Lua twin of scheduleUpstream (upstream/upstream-schedule.ts): the same
 * decision and integer arithmetic, on a layout whose cost per call does not
 * grow with the reservations held (docs/adr/0063-upstream-reservations-in-sorted-sets.md).
 * test/integration/upstream-lua-twin.test.ts holds the two together with the
 * shared vectors and a random-sequence property.
 *
 * KEYS[1]  the head, a string "cursorMs:cursorRem:day:count" (the compact
 *          state of upstream/upstream-state.ts without its entries; one an
 *          older release wrote with entries is moved to the sets on first use)
 * KEYS[2]  a sorted set of "holder:slotAtMs" scored by slot: lapses, the
 *          oldest, the count, the view
 * KEYS[3]  a sorted set of "holder:<slot, 16 digits>" all scored 0: one
 *          holder's own in slot order, by ZRANGEBYLEX
 * ARGV     nowMs, holder, limit, windowMs, headroomBp, maxWaitMs, dailyBudget,
 *          graceMs, maxReservations, ttlMarginMs, restore (a compact state to
 *          start from when the head is missing or does not parse; '' for none),
 *          maxReservationsPerHolder, claimSlotAtMs ('' for none)
 * Reply    {status, detail, slotAtMs, retryAfterMs, view after ('' for none),
 *          omitted}: status 0 run (detail 1 = claimed, slotAtMs the claimed
 *          slot), 1 reserved, 2 rejected (detail: 1 daily_budget, 2 max_wait,
 *          3 reservations_full, 4 token_reservations_full); the view is the
 *          compact state with its first UPSTREAM_VIEW_LIMIT reservations, and
 *          `omitted` how many later ones it leaves out.
 *
 * A write's TTL, on all three keys, is upstreamStateExpiresAtMs − nowMs +
 * ttlMarginMs (relative to the caller's clock, as every twin's is), at least
 * 1 ms. Each call does O(log n) work on the sets but for the lapses it drops,
 * each dropped once.
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
local HEAD, BY_SLOT, BY_HOLDER = KEYS[1], KEYS[2], KEYS[3]
local DAY_MS = 86400000
local VIEW_LIMIT = ${UPSTREAM_VIEW_LIMIT}
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

-- The compact form: the head, then ",holder:slotAtMs" per reservation (a value an older
-- release wrote, or a restore); the entries come back as a list, to be moved to the sets.
local function parse(raw)
  if not raw then
    return nil
  end
  local at = string.find(raw, ',', 1, true)
  local a, b, c, d = string.match(at and string.sub(raw, 1, at - 1) or raw, '^(%d+):(%d+):(%d+):(%d+)$')
  local s = {cursorMs = whole(a), cursorRem = whole(b), day = whole(c), count = whole(d), entries = {}}
  if not (s.cursorMs and s.cursorRem and s.day and s.count) then
    return nil
  end
  while at do
    local from = at + 1
    at = string.find(raw, ',', from, true)
    local h, slot = string.match(string.sub(raw, from, at and at - 1 or -1), '^([%w_%-]+):(%d+)$')
    local slotAtMs = whole(slot)
    if not h or #h > 64 or not slotAtMs then
      return nil
    end
    s.entries[#s.entries + 1] = {h, slotAtMs}
  end
  return s
end

-- The by-holder index sorts a holder's reservations by slot: all scores 0, slots zero-padded.
local function byHolder(h, slotAtMs)
  return string.format('%s:%016d', h, slotAtMs)
end

local function add(h, slotAtMs)
  redis.call('ZADD', BY_SLOT, slotAtMs, string.format('%s:%d', h, slotAtMs))
  redis.call('ZADD', BY_HOLDER, 0, byHolder(h, slotAtMs))
end

local function remove(h, slotAtMs)
  redis.call('ZREM', BY_SLOT, string.format('%s:%d', h, slotAtMs))
  redis.call('ZREM', BY_HOLDER, byHolder(h, slotAtMs))
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

${LUA_TTL_UNTIL}

-- 'stored': the head is of record; 'restored': the sets hold ARGV[11]'s entries for this call
-- only, unless it writes; 'none': no state at all.
local s = parse(redis.call('GET', HEAD))
local source = 'stored'
if not s then
  -- Sets without a head that parses are no state (the head is what expires and what is of record).
  redis.call('DEL', BY_SLOT, BY_HOLDER)
  source = 'restored'
  if ARGV[11] ~= '' then
    s = parse(ARGV[11])
  end
  if not s then
    source = 'none'
    s = {cursorMs = 0, cursorRem = 0, day = 0, count = 0, entries = {}}
  end
end
-- A head written by an older release carries its reservations: moved into the sets, and the head
-- rewritten without them, in this call.
local migrated = source == 'stored' and #s.entries > 0
for _, r in ipairs(s.entries) do
  add(r[1], r[2])
end
-- Kept as the call changes the sets, so an empty queue costs no more calls than the head's.
local live = redis.call('ZCARD', BY_SLOT)

-- The reservations lapsed by now: dropped, and their units of the day given back.
local count = s.count
local lapsedCount = 0
local cutoff = string.format('(%d', nowMs - graceMs)
for _, member in ipairs(live > 0 and redis.call('ZRANGEBYSCORE', BY_SLOT, '-inf', cutoff) or {}) do
  local h, slot = string.match(member, '^(.+):(%d+)$')
  local slotAtMs = tonumber(slot)
  if dayOf(slotAtMs) == s.day and count > 0 then
    count = count - 1
  end
  redis.call('ZREM', BY_HOLDER, byHolder(h, slotAtMs))
  lapsedCount = lapsedCount + 1
end
if lapsedCount > 0 then
  redis.call('ZREMRANGEBYSCORE', BY_SLOT, '-inf', cutoff)
  live = live - lapsedCount
end

local function listing()
  if live == 0 then
    return {}
  end
  return redis.call('ZRANGE', BY_SLOT, 0, VIEW_LIMIT - 1)
end

local function view(head, listed)
  if #listed == 0 then
    return head, live
  end
  return head .. ',' .. table.concat(listed, ','), live - #listed
end

local function reply(status, detail, slotAtMs, retryAfterMs, next)
  if next == nil and (lapsedCount > 0 or migrated) then
    next = {cursorMs = s.cursorMs, cursorRem = s.cursorRem, day = s.day, count = count}
  end
  if next == nil then
    if source == 'none' then
      return {status, detail, slotAtMs, retryAfterMs, '', 0}
    end
    local value, omitted = view(string.format('%d:%d:%d:%d', s.cursorMs, s.cursorRem, s.day, s.count), listing())
    if source == 'restored' then
      redis.call('DEL', BY_SLOT, BY_HOLDER)
    end
    return {status, detail, slotAtMs, retryAfterMs, value, omitted}
  end
  local head = string.format('%d:%d:%d:%d', next.cursorMs, next.cursorRem, next.day, next.count)
  local at = ceilMs(next.cursorMs, next.cursorRem)
  local listed = listing()
  if live > 0 then
    -- The latest slot: the view's last when it lists them all.
    local lastAtMs = #listed == live and tonumber(string.match(listed[#listed], '(%d+)$')) or tonumber(redis.call('ZRANGE', BY_SLOT, -1, -1, 'WITHSCORES')[2])
    at = math.max(at, lastAtMs + graceMs + 1)
  end
  if dailyBudget > 0 and next.count > 0 then
    at = math.max(at, (next.day + 1) * DAY_MS)
  end
  local ttl = string.format('%d', ttlUntil(at))
  redis.call('SET', HEAD, head, 'PX', ttl)
  -- As long as the head: a lapse left in the sets still gives its unit back until the state is gone.
  if live > 0 then
    redis.call('PEXPIRE', BY_SLOT, ttl)
    redis.call('PEXPIRE', BY_HOLDER, ttl)
  end
  local value, omitted = view(head, listed)
  return {status, detail, slotAtMs, retryAfterMs, value, omitted}
end

-- The holder's own reservations, in slot order, through the by-holder index.
local mineFrom, mineTo = '[' .. holder .. ':', '(' .. holder .. ';'
local target = nil
if live > 0 and claimSlotAtMs and claimSlotAtMs == math.floor(claimSlotAtMs) and claimSlotAtMs >= 0 and claimSlotAtMs <= 9007199254740991 then
  local member = string.format('%s:%d', holder, claimSlotAtMs)
  if claimSlotAtMs <= nowMs then
    -- Come: claimed if it is there, in the one command that finds it.
    if redis.call('ZREM', BY_SLOT, member) == 1 then
      redis.call('ZREM', BY_HOLDER, byHolder(holder, claimSlotAtMs))
      live = live - 1
      return reply(0, 1, claimSlotAtMs, 0, {cursorMs = s.cursorMs, cursorRem = s.cursorRem, day = s.day, count = count})
    end
  elseif redis.call('ZSCORE', BY_SLOT, member) then
    target = claimSlotAtMs
  end
end
-- The holder's oldest: claimed by a call that echoes nothing once its slot has come.
local oldestMine = nil
if target == nil and live > 0 then
  local oldest = redis.call('ZRANGEBYLEX', BY_HOLDER, mineFrom, mineTo, 'LIMIT', 0, 1)
  if #oldest == 1 then
    oldestMine = tonumber(string.sub(oldest[1], #holder + 2))
    if oldestMine <= nowMs then
      target = oldestMine
    end
  end
end

if target then
  if nowMs < target then
    return reply(1, 0, target, target - nowMs, nil)
  end
  remove(holder, target)
  live = live - 1
  return reply(0, 1, target, 0, {cursorMs = s.cursorMs, cursorRem = s.cursorRem, day = s.day, count = count})
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
  return reply(2, 1, 0, (day + 1) * DAY_MS - nowMs, nil)
end
if waitMs > maxWaitMs then
  return reply(2, 2, 0, waitMs - maxWaitMs, nil)
end
if waitMs == 0 then
  local cm, cr = afterOneInterval(nowMs, 0)
  return reply(0, 0, nowMs, 0, {cursorMs = cm, cursorRem = cr, day = day, count = spent + 1})
end
if oldestMine and (maxPerHolder == 1 or redis.call('ZLEXCOUNT', BY_HOLDER, mineFrom, mineTo) >= maxPerHolder) then
  return reply(2, 4, 0, math.max(1, oldestMine - nowMs), nil)
end
if live > 0 and live >= maxReservations then
  local first = redis.call('ZRANGE', BY_SLOT, 0, 0, 'WITHSCORES')
  return reply(2, 3, 0, math.max(1, tonumber(first[2]) + graceMs + 1 - nowMs), nil)
end
local cm, cr = afterOneInterval(slotAtMs + graceMs, 0)
add(holder, slotAtMs)
live = live + 1
return reply(1, 0, slotAtMs, waitMs, {cursorMs = cm, cursorRem = cr, day = day, count = spent + 1})
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

/** The twin's reply as an outcome and the state after (a view: `omitted` set when cut short); a malformed reply throws a TypeError. */
export function scheduledFromReply(reply: unknown): { outcome: UpstreamOutcome; state: UpstreamState | null } {
  if (!Array.isArray(reply) || reply.length !== 6 || !reply.slice(0, 4).every((n) => typeof n === 'number') || typeof reply[4] !== 'string' || typeof reply[5] !== 'number') {
    throw new TypeError(`unexpected reply from the upstream schedule script: ${JSON.stringify(reply)}`);
  }
  const [status, detail, slotAtMs, retryAfterMs, value, omitted] = reply as [number, number, number, number, string, number];
  const listed = value === '' ? null : parseUpstreamState(value);
  const state = listed !== null && omitted > 0 ? { ...listed, omitted } : listed;
  if (status === 0) return { outcome: detail === 1 ? { status: 'run', claimed: true, slotAtMs } : { status: 'run', claimed: false }, state };
  if (status === 1) return { outcome: { status: 'reserved', slotAtMs, retryAfterMs }, state };
  const reason = REJECTIONS[detail - 1];
  if (status !== 2 || reason === undefined) throw new TypeError(`unexpected reply from the upstream schedule script: ${JSON.stringify(reply)}`);
  return { outcome: { status: 'rejected', reason, retryAfterMs }, state };
}
