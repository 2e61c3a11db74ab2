import { DAY_MS, type UpstreamPolicy } from './upstream-policy';
import type { UpstreamState } from './upstream-state';

/**
 * The upstream policy one instance schedules by during a fail-open outage
 * when it knows the fleet (ADR 0067), pure: its share of the rate (headroom
 * divided by the live instances, so its local slots are that many times as
 * far apart) and its share of what the day's budget had left when it last
 * saw the shared state, at least one call while any was left. One instance
 * (or fewer): the policy itself, ADR 0040's per-instance cursor.
 */
export function upstreamOutagePolicy(policy: UpstreamPolicy, instances: number, seen: UpstreamState | null, nowMs: number): UpstreamPolicy {
  const n = Math.floor(instances);
  if (!(n > 1)) return policy;
  const headroomBp = Math.max(1, Math.floor(policy.headroomBp / n));
  if (policy.dailyBudget === 0) return { ...policy, headroomBp };
  const spent = seen !== null && seen.day === Math.floor(nowMs / DAY_MS) ? seen.count : 0;
  const left = policy.dailyBudget - spent;
  // Nothing left: the budget as it is, so the local cursor refuses like the shared one.
  const dailyBudget = left <= 0 ? policy.dailyBudget : spent + Math.max(1, Math.floor(left / n));
  return { ...policy, headroomBp, dailyBudget };
}
