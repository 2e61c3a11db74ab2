import { algorithmFor } from '../window/decide-set';
import type { PolicySet } from '../window/policy';

/**
 * How an instance counts its share of the fleet's limit during an outage
 * (ADR 0067, narrowing ADR 0003). Pure: no clock, no I/O; the live-instance
 * estimate comes from FleetEstimate (heartbeats in the shared store).
 *
 * The local window starts from the shared state this instance last saw
 * (ADR 0009), so its budget is what REMAINED of the limit, not the limit.
 * Rather than rewrite each algorithm's state into a smaller one, a call is
 * charged `weight` units to the local state, where weight is the number of
 * live instances: the instance then gets 1/weight of whatever the state
 * holds, algorithm by algorithm, with no algorithm-specific code:
 * - fixed window: floor(remaining / n) of the current window, then
 *   floor(limit / n) of each new window the outage lasts into;
 * - sliding window: floor(remaining / n) of the weighted estimate, freed
 *   units coming back at 1/n as the previous window slides out;
 * - sliding log: floor(remaining / n), a call's n entries expiring together;
 * - token bucket: floor(tokens / n) now, refill at rate / n, burst / n;
 * - leaky bucket: floor(room / n) now, draining at rate / n.
 *
 * Rounding: down, but never below one call per fresh window. The weight is
 * capped so that `cost` still fits in the smallest policy's largest cost:
 * a limit of 5 on 100 instances charges 5 per call, so each instance admits
 * one call a window (the fleet at most 100, not 5, and not 0). So the fleet
 * admits at most max(remaining, n × cost) per window of the outage when the
 * estimate is right, and (actual / estimated) × that when it is low.
 */
export type OutageShareMode = 'fleet' | 'instance';

export const OUTAGE_SHARE_MODES: readonly OutageShareMode[] = ['fleet', 'instance'];

/**
 * Units a call of `cost` is charged to the local state during an outage,
 * per unit of cost. 1 = the whole remaining budget (mode `instance`, or a
 * fleet of one). `instances` is the live-instance estimate (>= 1).
 */
export function outageWeight(policies: PolicySet, cost: number, instances: number): number {
  const n = Math.floor(instances);
  if (!(n > 1) || cost <= 0) return 1;
  let fits = Number.MAX_SAFE_INTEGER;
  for (const policy of policies) {
    const most = Math.floor(algorithmFor(policy).maxCost(policy) / cost);
    if (most < fits) fits = most;
  }
  return Math.max(1, Math.min(n, fits));
}

/** The units charged locally for a call of `cost` (cost × weight). */
export function outageCharge(policies: PolicySet, cost: number, instances: number): number {
  return cost * outageWeight(policies, cost, instances);
}

/** The most a fleet of `instances` admits from `remaining` units of one window, as stated in ADR 0003. */
export function fleetOutageBound(remaining: number, instances: number, cost = 1): number {
  return Math.max(remaining, Math.max(1, Math.floor(instances)) * cost);
}
