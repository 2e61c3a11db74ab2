import type { TokenBucketState } from '../../../window/token-bucket';
import { luaParseIntegers } from './lua-fragments';
import { luaTwin } from './twin-protocol';

/**
 * The Lua twin of `tokenBucket` (algorithms/token-bucket.ts), decide and
 * adjust, called as twin-protocol.ts describes. The value is
 * "scaledTokens:updatedAtMs" (scaledTokens = tokens × windowMs, negative for a
 * debt). Same integer arithmetic, line for line;
 * test/integration/algorithm-lua-twins.test.ts holds the two together.
 */
/** Statements: a new local `target`, the scaled level of a state (its tokens and time locals, nil: none) at `atMs`. */
function levelAt(target: string, tokens: string, updatedAt: string, atMs: string): string {
  return `local ${target} = capacity
if ${tokens} and ${tokens} < capacity then
  local untilFullMs = math.ceil((capacity - ${tokens}) / limit)
  local elapsedMs = ${atMs} - ${updatedAt}
  if elapsedMs < untilFullMs then
    ${target} = ${tokens} + elapsedMs * limit
  end
end`;
}

/** Statements setting `target` (existing) to when a bucket at `scaled` at `atMs` is full again. */
function fullAt(target: string, scaled: string, atMs: string): string {
  return `${target} = ${atMs}
if capacity - ${scaled} > 0 then
  ${target} = ${atMs} + math.ceil((capacity - ${scaled}) / limit)
end`;
}

const PATTERN = '^(%-?%d+):(%d+)$';

export const TOKEN_BUCKET_TWIN = luaTwin(`
${luaParseIntegers('raw', PATTERN, ['stateTokens', 'stateAt'])}

local capacity = burst * windowMs

if mode == 'decide' then
  local cost = amount
  local atMs = nowMs
  if stateTokens and stateAt > atMs then
    atMs = stateAt
  end
${levelAt('level', 'stateTokens', 'stateAt', 'atMs')}
  local needed = cost * windowMs
  local allowed = cost == 0 or (cost <= burst and needed <= level)
  local after = level
  if allowed then
    after = level - needed
  end
  local resetAtMs = 0
${fullAt('resetAtMs', 'after', 'atMs')}
  local retryAfterMs = 0
  if not allowed and cost > burst then
    retryAfterMs = math.max(1, resetAtMs - nowMs)
  elseif not allowed then
    retryAfterMs = atMs + math.ceil((needed - level) / limit) - nowMs
  end
  rAllowed = allowed
  rRemaining = math.max(0, math.floor(after / windowMs))
  rResetAtMs = resetAtMs
  rRetryAfterMs = retryAfterMs
  if allowed and cost > 0 then
    wValue = string.format('%d:%d', after, atMs)
    wExpiresAtMs = resetAtMs
  end
else
  local delta = amount
${luaParseIntegers('atLeastRaw', PATTERN, ['knownTokens', 'knownAt'])}
  local atMs = nowMs
  if stateTokens and stateAt > atMs then
    atMs = stateAt
  end
  if knownTokens and knownAt > atMs then
    atMs = knownAt
  end
${levelAt('own', 'stateTokens', 'stateAt', 'atMs')}
${levelAt('known', 'knownTokens', 'knownAt', 'atMs')}
  local scaledTokens = math.min(capacity, math.min(own, known) - delta * windowMs)
  if scaledTokens ~= own then
    wValue = string.format('%d:%d', scaledTokens, atMs)
${fullAt('wExpiresAtMs', 'scaledTokens', 'atMs')}
  end
end
`);

export function formatTokenBucketValue(state: TokenBucketState): string {
  return `${state.scaledTokens}:${state.updatedAtMs}`;
}

export function parseTokenBucketValue(value: string | null): TokenBucketState | null {
  const match = value === null ? null : /^(-?\d+):(\d+)$/.exec(value);
  return match === null ? null : { scaledTokens: Number(match[1]), updatedAtMs: Number(match[2]) };
}
