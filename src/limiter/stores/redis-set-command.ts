import { burstOf, type Adjustment } from '../algorithms';
import { algorithmFor } from '../decide-set';
import type { WindowDecision } from '../decision';
import type { StoreDecision } from '../limit-store';
import { algorithmOf, stateSlotOf, type PolicySet, type RateLimitPolicy } from '../policy';
import { SET_SCRIPT_SHA1 } from './lua/set-script';
import { REDIS_BAD_REPLY, RedisStoreError } from './redis-store-error';
import { isSingleFixedWindow, STATE_CODECS } from './state-codecs';

/**
 * The set script's calling convention (lua/set-script.ts) on the TypeScript
 * side: the EVALSHA arguments of a decision or an adjustment, and the checked
 * replies. Where each policy's state lives in Redis is decided here: the
 * default single fixed window keeps `prefix + key`, the key it always had, so
 * an upgrade reads the counts it wrote; any other set keeps one key per
 * policy, `prefix + key + ':' + stateSlotOf(policy)`.
 */

export function redisKeyOf(keyPrefix: string, key: string, policies: PolicySet, policy: RateLimitPolicy): string {
  return isSingleFixedWindow(policies) ? keyPrefix + key : `${keyPrefix}${key}:${stateSlotOf(policy)}`;
}

function command(
  mode: 'decide' | 'adjust',
  keyPrefix: string,
  key: string,
  nowMs: number,
  ttlMarginArg: string,
  policies: PolicySet,
  perPolicy: (i: number, policy: RateLimitPolicy) => readonly [amount: string, atLeast: string],
): string[] {
  const keys: string[] = [];
  const args: string[] = [mode, String(nowMs), ttlMarginArg];
  policies.forEach((policy, i) => {
    keys.push(redisKeyOf(keyPrefix, key, policies, policy));
    args.push(algorithmOf(policy), String(policy.limit), String(policy.windowMs), String(burstOf(policy)), ...perPolicy(i, policy));
  });
  return ['EVALSHA', SET_SCRIPT_SHA1, String(keys.length), ...keys, ...args];
}

export function decideCommand(keyPrefix: string, key: string, nowMs: number, ttlMarginArg: string, policies: PolicySet, cost: number): string[] {
  const amount = String(cost);
  return command('decide', keyPrefix, key, nowMs, ttlMarginArg, policies, () => [amount, '']);
}

export function adjustCommand(
  keyPrefix: string,
  key: string,
  nowMs: number,
  ttlMarginArg: string,
  policies: PolicySet,
  adjustments: readonly (Adjustment<unknown> | null)[],
): string[] {
  return command('adjust', keyPrefix, key, nowMs, ttlMarginArg, policies, (i, policy) => {
    const adjustment = adjustments[i] ?? null;
    // No adjustment: a delta of 0 and no floor, which every twin answers with "nothing written".
    if (adjustment === null) return ['0', ''];
    const atLeast = adjustment.atLeast === null ? '' : STATE_CODECS[algorithmOf(policy)].format(adjustment.atLeast);
    return [String(adjustment.deltaUnits), atLeast];
  });
}

/** Five values per policy: allowed, remaining, resetAtMs, retryAfterMs, the value after. */
export function decisionFromSetReply(reply: unknown, policies: PolicySet): StoreDecision {
  if (!Array.isArray(reply) || reply.length !== 5 * policies.length) {
    throw new RedisStoreError(REDIS_BAD_REPLY, 'redis set script returned an unexpected decide reply');
  }
  const decisions: WindowDecision[] = [];
  const states: unknown[] = [];
  let allowed = true;
  policies.forEach((policy, i) => {
    const [ok, remaining, resetAtMs, retryAfterMs, value] = reply.slice(5 * i, 5 * i + 5) as unknown[];
    if (typeof ok !== 'number' || typeof remaining !== 'number' || typeof resetAtMs !== 'number' || typeof retryAfterMs !== 'number' || typeof value !== 'string') {
      throw new RedisStoreError(REDIS_BAD_REPLY, 'redis set script returned an unexpected decide reply');
    }
    const algorithm = algorithmOf(policy);
    if (ok !== 1) allowed = false;
    decisions.push({ allowed: ok === 1, limit: algorithmFor(policy).maxCost(policy), remaining, resetAtMs, retryAfterMs });
    states.push(value === '' ? null : STATE_CODECS[algorithm].parse(value));
  });
  return { allowed, decisions, states };
}

/** Two values per policy: written 1|0 and the value after. */
export function assertAdjustReply(reply: unknown, policies: PolicySet): void {
  if (!Array.isArray(reply) || reply.length !== 2 * policies.length) {
    throw new RedisStoreError(REDIS_BAD_REPLY, 'redis set script returned an unexpected adjust reply');
  }
}
