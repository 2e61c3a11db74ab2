import { createHash } from 'node:crypto';
import { burstOf, type LimitParams } from '../../../window/algorithm';
import type { WindowDecision } from '../../../window/decision';

/**
 * How every algorithm's Lua twin (this folder) is called on its own: one
 * script per algorithm on one key, with a mode argument so decide and adjust
 * share the parsing and the arithmetic. The vectors and the random-sequence
 * tests run each twin this way; the Redis store runs the same bodies inside
 * set-script.ts, which decides a whole policy set in one script.
 *
 * KEYS[1]  the key; its value is the algorithm's compact string (each file documents it)
 * ARGV[1]  'decide' or 'adjust'
 * ARGV[2]  nowMs          ARGV[3] limit       ARGV[4] windowMs
 * ARGV[5]  burst, resolved (params.burst, or limit when unset; the windows ignore it)
 * ARGV[6]  ttlMarginMs, added to the TTL (PX, relative to the caller's nowMs:
 *          Redis's own clock never decides an expiry, so a server clock that
 *          runs ahead cannot expire live state and hand out a fresh budget)
 * ARGV[7]  decide: cost; adjust: deltaUnits (may be negative)
 * ARGV[8]  adjust only: atLeast as the same compact string, or '' for none
 *
 * Replies, all integers (Redis truncates Lua numbers; every value here is whole):
 * decide  {allowed 1|0, remaining, resetAtMs, retryAfterMs}
 * adjust  {written 1|0}
 *
 * The TTL of a write is expiresAtMs(next) − nowMs + ttlMarginMs, at least 1 ms.
 * Numbers travel as decimal strings and are written back with %d, never
 * tostring (which keeps 14 significant digits). Every value is an integer
 * below 2^53, so Lua's doubles and JavaScript's numbers agree bit for bit.
 */

/**
 * What a twin's body is: straight-line Lua with no function literal and no
 * return (each function a script runs is a closure made on every call, and
 * each table an allocation: the set script spent 10.5-11.6 µs of Redis time
 * where a minimal script spent 7.4, issue 22). It reads the locals its host
 * declares, and answers by assigning the host's result locals:
 *
 * in   mode, nowMs, limit, windowMs, burst, amount (decide: cost; adjust:
 *      deltaUnits), atLeastRaw (adjust: the floor's string, '' for none),
 *      raw (the key's value; nil or false for none)
 * out  decide: rAllowed (boolean), rRemaining, rResetAtMs, rRetryAfterMs
 *      both: wValue, the write (nil: none; a string: SET it until
 *      wExpiresAtMs, plus the TTL margin; false: DEL the key)
 *
 * An adjust has written exactly when wValue is not nil.
 */
export const LUA_TWIN_LOCALS = `
local rAllowed, rRemaining, rResetAtMs, rRetryAfterMs = false, 0, 0, 0
local wValue, wExpiresAtMs = nil, 0
`.trim();

/** Lua shared by every twin run on its own: the arguments, the key's value and the result locals. */
export const LUA_PRELUDE = `
local mode = ARGV[1]
local nowMs = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local windowMs = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local ttlMarginMs = tonumber(ARGV[6])
local amount = tonumber(ARGV[7])
local atLeastRaw = ARGV[8]
local raw = redis.call('GET', KEYS[1])
${LUA_TWIN_LOCALS}
`.trim();

/** A twin run on its own: its write, then its reply. */
export const LUA_EPILOGUE = `
if wValue then
  local ttl = wExpiresAtMs - nowMs + ttlMarginMs
  if ttl < 1 then
    ttl = 1
  end
  redis.call('SET', KEYS[1], wValue, 'PX', string.format('%d', ttl))
elseif wValue == false then
  redis.call('DEL', KEYS[1])
end
if mode == 'decide' then
  if rAllowed then
    return {1, rRemaining, rResetAtMs, rRetryAfterMs}
  end
  return {0, rRemaining, rResetAtMs, rRetryAfterMs}
end
if wValue == nil then
  return {0}
end
return {1}
`.trim();

export interface LuaTwin {
  /** The algorithm's own Lua (see LUA_TWIN_LOCALS): set-script.ts inlines it beside the others. */
  readonly body: string;
  readonly script: string;
  /** What EVALSHA names the script by; Redis computes the same SHA1 over the same bytes. */
  readonly sha1: string;
}

/** Lua words a twin's body may not hold, so no closure is made and no host code skipped (whole words, outside strings). */
const FORBIDDEN_IN_BODY = /\b(function|return|redis|KEYS|ARGV)\b/;

export function luaTwin(body: string): LuaTwin {
  const trimmed = body.trim();
  const bad = FORBIDDEN_IN_BODY.exec(trimmed.replace(/'[^']*'/g, "''").replace(/--[^\n]*/g, ''));
  if (bad !== null) throw new Error(`a Lua twin's body must be straight-line Lua reading its host's locals; it holds "${bad[0]}"`);
  const script = `${LUA_PRELUDE}\n\ndo\n${trimmed}\nend\n\n${LUA_EPILOGUE}`;
  return { body: trimmed, script, sha1: createHash('sha1').update(script).digest('hex') };
}

/** The default margin stores add to every TTL (as the fixed-window store does). */
export const DEFAULT_TTL_MARGIN_MS = 10_000;

function common(nowMs: number, params: LimitParams, ttlMarginMs: number): string[] {
  return [String(nowMs), String(params.limit), String(params.windowMs), String(burstOf(params)), String(ttlMarginMs)];
}

export function decideArgs(nowMs: number, params: LimitParams, cost: number, ttlMarginMs = DEFAULT_TTL_MARGIN_MS): string[] {
  return ['decide', ...common(nowMs, params, ttlMarginMs), String(cost)];
}

/** `atLeast` already formatted with the algorithm's compact string (or null). */
export function adjustArgs(nowMs: number, params: LimitParams, deltaUnits: number, atLeast: string | null, ttlMarginMs = DEFAULT_TTL_MARGIN_MS): string[] {
  return ['adjust', ...common(nowMs, params, ttlMarginMs), String(deltaUnits), atLeast ?? ''];
}

/** The decide reply as a WindowDecision; `limit` is the algorithm's maxCost(params). */
export function decisionFromReply(reply: unknown, limit: number): WindowDecision {
  if (!Array.isArray(reply) || reply.length !== 4 || !reply.every((n) => typeof n === 'number')) {
    throw new TypeError(`unexpected decide reply from a Lua twin: ${JSON.stringify(reply)}`);
  }
  const [allowed, remaining, resetAtMs, retryAfterMs] = reply as [number, number, number, number];
  return { allowed: allowed === 1, limit, remaining, resetAtMs, retryAfterMs };
}

/** The adjust reply: whether the script wrote. */
export function writtenFromReply(reply: unknown): boolean {
  if (!Array.isArray(reply) || reply.length !== 1 || (reply[0] !== 0 && reply[0] !== 1)) {
    throw new TypeError(`unexpected adjust reply from a Lua twin: ${JSON.stringify(reply)}`);
  }
  return reply[0] === 1;
}
