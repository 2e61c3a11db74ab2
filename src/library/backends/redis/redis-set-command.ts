import { burstOf, type Adjustment, type AlgorithmName, type AnyAlgorithm } from '../../window/algorithms';
import { compiledSetOf, type CompiledPolicySet } from '../../window/compiled-policy-set';
import type { WindowDecision } from '../../window/decision';
import type { StoreDecision } from '../../limiter/limit-store';
import { algorithmOf, type PolicySet, type RateLimitPolicy } from '../../window/policy';
import { SET_SCRIPT_SHA1 } from './lua/set-script';
import { REDIS_BAD_REPLY, RedisStoreError } from './redis-store-error';
import { isSingleFixedWindow, STATE_CODECS, type StateCodec } from '../../support/state-codecs';

/**
 * The set script's calling convention (lua/set-script.ts) on the TypeScript
 * side: the EVALSHA arguments of a decision or an adjustment, and the checked
 * replies. Where each policy's state lives in Redis is decided here: the
 * default single fixed window keeps `prefix + key`, the key it always had, so
 * an upgrade reads the counts it wrote; any other set keeps one key per
 * policy, `prefix + key + ':' + stateSlotOf(policy)`.
 */

/** What the set's EVALSHA carries that depends on the set alone, built once per set. */
interface SetShape {
  readonly size: number;
  readonly keyCount: string;
  /** Appended to `prefix + key` per policy: '' for the single fixed window's own key, else ':' + slot. */
  readonly keySuffixes: readonly string[];
  /** algorithm, limit, windowMs, burst (resolved), per policy. */
  readonly policyArgs: readonly (readonly string[])[];
  readonly maxCosts: readonly number[];
  readonly codecs: readonly StateCodec[];
}

const shapes = new WeakMap<CompiledPolicySet, SetShape>();

function shapeOf(policies: PolicySet): SetShape {
  const set = compiledSetOf(policies);
  let shape = shapes.get(set);
  if (shape === undefined) {
    const single = isSingleFixedWindow(policies);
    shape = {
      size: set.size,
      keyCount: String(set.size),
      keySuffixes: set.slots.map((slot) => (single ? '' : `:${slot}`)),
      policyArgs: policies.map((policy, i) => [set.algorithmNames[i] as AlgorithmName, String(policy.limit), String(policy.windowMs), String(burstOf(policy))]),
      maxCosts: policies.map((policy, i) => (set.algorithms[i] as AnyAlgorithm).maxCost(policy)),
      codecs: set.algorithmNames.map((name) => STATE_CODECS[name]),
    };
    shapes.set(set, shape);
  }
  return shape;
}

function command(
  mode: 'decide' | 'adjust',
  keyPrefix: string,
  key: string,
  nowMs: number,
  ttlMarginArg: string,
  policies: PolicySet,
  perPolicy: (i: number) => readonly [amount: string, atLeast: string],
): string[] {
  const shape = shapeOf(policies);
  const command = ['EVALSHA', SET_SCRIPT_SHA1, shape.keyCount];
  const prefixed = keyPrefix + key;
  for (let i = 0; i < shape.size; i++) command.push(prefixed + (shape.keySuffixes[i] as string));
  command.push(mode, String(nowMs), ttlMarginArg);
  for (let i = 0; i < shape.size; i++) command.push(...(shape.policyArgs[i] as readonly string[]), ...perPolicy(i));
  return command;
}

export function decideCommand(keyPrefix: string, key: string, nowMs: number, ttlMarginArg: string, policies: PolicySet, cost: number): string[] {
  const perPolicy: readonly [string, string] = [String(cost), ''];
  return command('decide', keyPrefix, key, nowMs, ttlMarginArg, policies, () => perPolicy);
}

export function adjustCommand(
  keyPrefix: string,
  key: string,
  nowMs: number,
  ttlMarginArg: string,
  policies: PolicySet,
  adjustments: readonly (Adjustment<unknown> | null)[],
): string[] {
  return command('adjust', keyPrefix, key, nowMs, ttlMarginArg, policies, (i) => {
    const adjustment = adjustments[i] ?? null;
    // No adjustment: a delta of 0 and no floor, which every twin answers with "nothing written".
    if (adjustment === null) return ['0', ''];
    const atLeast = adjustment.atLeast === null ? '' : STATE_CODECS[algorithmOf(policies[i] as RateLimitPolicy)].format(adjustment.atLeast);
    return [String(adjustment.deltaUnits), atLeast];
  });
}

/** Five values per policy: allowed, remaining, resetAtMs, retryAfterMs, the value after. */
export function decisionFromSetReply(reply: unknown, policies: PolicySet): StoreDecision {
  const shape = shapeOf(policies);
  if (!Array.isArray(reply) || reply.length !== 5 * shape.size) {
    throw new RedisStoreError(REDIS_BAD_REPLY, 'redis set script returned an unexpected decide reply');
  }
  const decisions: WindowDecision[] = [];
  const states: unknown[] = [];
  let allowed = true;
  for (let i = 0, at = 0; i < shape.size; i++, at += 5) {
    const ok: unknown = reply[at];
    const remaining: unknown = reply[at + 1];
    const resetAtMs: unknown = reply[at + 2];
    const retryAfterMs: unknown = reply[at + 3];
    const value: unknown = reply[at + 4];
    if (typeof ok !== 'number' || typeof remaining !== 'number' || typeof resetAtMs !== 'number' || typeof retryAfterMs !== 'number' || typeof value !== 'string') {
      throw new RedisStoreError(REDIS_BAD_REPLY, 'redis set script returned an unexpected decide reply');
    }
    if (ok !== 1) allowed = false;
    decisions.push({ allowed: ok === 1, limit: shape.maxCosts[i] as number, remaining, resetAtMs, retryAfterMs });
    states.push(value === '' ? null : (shape.codecs[i] as StateCodec).parse(value));
  }
  return { allowed, decisions, states };
}

/** Two values per policy: written 1|0 and the value after. */
export function assertAdjustReply(reply: unknown, policies: PolicySet): void {
  if (!Array.isArray(reply) || reply.length !== 2 * policies.length) {
    throw new RedisStoreError(REDIS_BAD_REPLY, 'redis set script returned an unexpected adjust reply');
  }
}
