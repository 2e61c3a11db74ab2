import type { LeakyBucketState } from '../../../window/leaky-bucket';
import { luaCeilMsInto, luaParseIntegers } from './lua-fragments';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `leakyBucket` (GCRA, algorithms/leaky-bucket.ts), decide
 * and adjust, called as twin-protocol.ts describes. The value is
 * "tatMs:tatRemainder" (TAT = tatMs + tatRemainder / limit ms). Same integer
 * arithmetic, line for line; test/integration/algorithm-lua-twins.test.ts holds
 * the two together.
 */
// Times here are exact: whole ms and a remainder in 1/limit ms. Each helper below is Lua text
// inlined where it is used (a Lua function would be a closure made on every call).

/** Statements: new locals `m`, `r`, the time ms + rem/limit moved on by `units` emissions (units × windowMs / limit ms). */
function shift(m: string, r: string, ms: string, rem: string, units: string): string {
  return `local ${m}, ${r}
do
  local scaled = ${rem} + (${units}) * windowMs
  local carry = math.floor(scaled / limit)
  ${m} = ${ms} + carry
  ${r} = scaled - carry * limit
end`;
}

/** Statements: new locals `m`, `r`, the later of two exact times (the first on a tie). */
function later(m: string, r: string, a: readonly [string, string], b: readonly [string, string]): string {
  const [am, ar] = a;
  const [bm, br] = b;
  return `local ${m}, ${r} = ${bm}, ${br}
if ${am} > ${bm} or (${am} == ${bm} and ${ar} >= ${br}) then
  ${m}, ${r} = ${am}, ${ar}
end`;
}

/** Statements: new locals `m`, `r`, a state's theoretical arrival time (its two locals, nil: none), normalised; now when none. */
function tatOf(m: string, r: string, stateMs: string, stateRem: string): string {
  return `local ${m}, ${r} = nowMs, 0
if ${stateMs} then
  local carry = math.floor(${stateRem} / limit)
  ${m} = ${stateMs} + carry
  ${r} = ${stateRem} - carry * limit
end`;
}

/** Statements: a new local `target`, whether the time ms + rem/limit is at most `span`/limit ms ahead of now. */
function withinSpan(target: string, ms: string, rem: string, span: string): string {
  return `local ${target}
do
  local spanMs = math.floor((${span}) / limit)
  local spanRem = (${span}) - spanMs * limit
  local aheadMs = ${ms} - nowMs
  ${target} = aheadMs < spanMs or (aheadMs == spanMs and ${rem} <= spanRem)
end`;
}

const PATTERN = '^(%d+):(%d+)$';

export const LEAKY_BUCKET_TWIN = luaTwin(`
${luaParseIntegers('raw', PATTERN, ['stateMs', 'stateRem'])}

if mode == 'decide' then
  local cost = amount
${tatOf('tm', 'tr', 'stateMs', 'stateRem')}
${later('bm', 'br', ['tm', 'tr'], ['nowMs', '0'])}
${shift('mm', 'mr', 'bm', 'br', 'cost')}
${withinSpan('fits', 'mm', 'mr', 'burst * windowMs')}
  local allowed = cost == 0 or (cost <= burst and fits)
  local am, ar = bm, br
  if allowed then
    am, ar = mm, mr
  end
  local resetAtMs = 0
${luaCeilMsInto('resetAtMs', 'am', 'ar')}
  local remaining = 0
${withinSpan('inside', 'am', 'ar', 'burst * windowMs')}
  if inside then
    local aheadScaled = (am - nowMs) * limit + ar
    remaining = math.floor((burst * windowMs - aheadScaled) / windowMs)
  end
  local retryAfterMs = 0
  if not allowed and cost > burst then
    retryAfterMs = math.max(1, resetAtMs - nowMs)
  elseif not allowed then
${shift('rm', 'rr', 'bm', 'br', 'cost - burst')}
    local fitAtMs = 0
${luaCeilMsInto('fitAtMs', 'rm', 'rr')}
    retryAfterMs = fitAtMs - nowMs
  end
  rAllowed = allowed
  rRemaining = remaining
  rResetAtMs = resetAtMs
  rRetryAfterMs = retryAfterMs
  if allowed and cost > 0 then
    wValue = string.format('%d:%d', am, ar)
    wExpiresAtMs = resetAtMs
  end
else
  local delta = amount
${luaParseIntegers('atLeastRaw', PATTERN, ['knownMs', 'knownRem'])}
${tatOf('sm', 'sr', 'stateMs', 'stateRem')}
${later('om', 'orem', ['sm', 'sr'], ['nowMs', '0'])}
${tatOf('km', 'kr', 'knownMs', 'knownRem')}
${later('mm', 'mr', ['om', 'orem'], ['km', 'kr'])}
${shift('dm', 'dr', 'mm', 'mr', 'delta')}
${later('rm', 'rr', ['dm', 'dr'], ['nowMs', '0'])}
  if rm ~= om or rr ~= orem then
    wValue = string.format('%d:%d', rm, rr)
${luaCeilMsInto('wExpiresAtMs', 'rm', 'rr')}
  end
end
`);

export function formatLeakyBucketValue(state: LeakyBucketState): string {
  return `${state.tatMs}:${state.tatRemainder}`;
}

export function parseLeakyBucketValue(value: string | null): LeakyBucketState | null {
  const match = value === null ? null : /^(\d+):(\d+)$/.exec(value);
  return match === null ? null : { tatMs: Number(match[1]), tatRemainder: Number(match[2]) };
}
