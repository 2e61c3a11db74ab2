import { Counter, Gauge, type Registry } from 'prom-client';
import type { GatewayEvents } from '../gateway/gateway';
import type { GateAnswer, UpstreamQuota, UpstreamQuotaEvents } from '../gateway/upstream-quota-gate';
import type { BackendFailureCause } from '../library';
import type { UpstreamState } from '../library/quota';

/**
 * The gateway's series: calls forwarded upstream and how they ended, what
 * the upstream quotas answered (run, held then run, reserved, rejected,
 * cancelled), and each quota's day against its daily budget when one is set.
 * The `quota` label is "upstream" (the shared one) or a tool named in the
 * limits file, so its values are bounded by configuration.
 */
export class UpstreamMetrics implements GatewayEvents, UpstreamQuotaEvents {
  private readonly calls: Counter<'outcome'>;
  private readonly quota: Counter<'answer' | 'quota'>;
  private readonly heldSeconds: Counter;
  private readonly dayUsed: Gauge<'quota'>;
  private readonly dayShare: Gauge<'quota'>;
  private readonly unshared: Counter<'cause'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.calls = new Counter({ name: 'firelimit_upstream_calls_total', help: 'tools/call forwarded to the upstream MCP server, by outcome (ok, tool_error, unreachable, timeout, refused, protocol, invalid).', labelNames: ['outcome'], registers });
    this.quota = new Counter({
      name: 'firelimit_upstream_quota_answers_total',
      help: 'Upstream quota answers: run (at once), held (waited in the request, then ran), reserved (told to come back), rejected, cancelled (the caller left while held). quota: the one that made the caller wait; for run and held, "all".',
      labelNames: ['answer', 'quota'],
      registers,
    });
    this.heldSeconds = new Counter({ name: 'firelimit_upstream_held_seconds_total', help: 'Time calls spent held for their slot inside the request (billed instance time on Cloud Run).', registers });
    this.dayUsed = new Gauge({ name: 'firelimit_upstream_quota_day_used', help: 'Upstream slots handed out this UTC day per quota, as this instance last saw the shared state.', labelNames: ['quota'], registers });
    this.unshared = new Counter({ name: 'firelimit_upstream_quota_unshared_total', help: 'Upstream quota decisions made without the shared backend (timeout, error, outage, contention: the key stayed contended): scheduled on this instance alone (fail-open) or refused as unavailable (fail-closed).', labelNames: ['cause'], registers });
    this.dayShare = new Gauge({ name: 'firelimit_upstream_quota_day_share', help: "Share of a quota's daily budget handed out this UTC day (0 when it has none).", labelNames: ['quota'], registers });
  }

  readonly onForward = (outcome: Parameters<NonNullable<GatewayEvents['onForward']>>[0]): void => {
    this.calls.inc({ outcome });
  };

  readonly onDecision = (answer: GateAnswer): void => {
    const label = answer.status === 'run' ? (answer.heldMs > 0 ? 'held' : 'run') : answer.status;
    this.quota.inc({ answer: label, quota: answer.status === 'reserved' || answer.status === 'rejected' ? answer.quota : 'all' });
    if ((answer.status === 'run' || answer.status === 'cancelled') && answer.heldMs > 0) this.heldSeconds.inc(answer.heldMs / 1000);
  };

  readonly onUnshared = (cause: BackendFailureCause): void => {
    this.unshared.inc({ cause });
  };

  readonly onState = (quota: UpstreamQuota, state: UpstreamState | null): void => {
    if (state === null) return;
    this.dayUsed.set({ quota: quota.name }, state.count);
    this.dayShare.set({ quota: quota.name }, quota.policy.dailyBudget === 0 ? 0 : state.count / quota.policy.dailyBudget);
  };
}
