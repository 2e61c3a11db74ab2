import { Counter, Gauge, type Registry } from 'prom-client';
import type { GatewayEvents } from '../gateway/gateway';
import type { GateAnswer, UpstreamQuotaEvents } from '../gateway/upstream-quota-gate';
import type { UpstreamState } from '../limiter/upstream/upstream-state';

/**
 * The gateway's series: calls forwarded upstream and how they ended, and what
 * the shared quota answered (run, held then run, reserved, rejected), with
 * the day's share of the daily budget when one is set.
 */
export class UpstreamMetrics implements GatewayEvents, UpstreamQuotaEvents {
  private readonly calls: Counter<'outcome'>;
  private readonly quota: Counter<'answer'>;
  private readonly heldSeconds: Counter;
  private readonly dayUsed: Gauge;
  private readonly dayShare: Gauge;

  constructor(registry: Registry, private readonly dailyBudget: number | undefined) {
    const registers = [registry];
    this.calls = new Counter({ name: 'firelimit_upstream_calls_total', help: 'tools/call forwarded to the upstream MCP server, by outcome (ok, tool_error, unreachable, timeout, refused, protocol).', labelNames: ['outcome'], registers });
    this.quota = new Counter({ name: 'firelimit_upstream_quota_answers_total', help: 'Shared upstream quota answers: run (at once), held (waited in the request, then ran), reserved (told to come back), rejected.', labelNames: ['answer'], registers });
    this.heldSeconds = new Counter({ name: 'firelimit_upstream_held_seconds_total', help: 'Time calls spent held for their slot inside the request (billed instance time on Cloud Run).', registers });
    this.dayUsed = new Gauge({ name: 'firelimit_upstream_quota_day_used', help: 'Upstream slots handed out this UTC day, as this instance last saw the shared state.', registers });
    this.dayShare = new Gauge({ name: 'firelimit_upstream_quota_day_share', help: 'Share of UPSTREAM_DAILY_BUDGET handed out this UTC day (0 when no budget is set).', registers });
  }

  readonly onForward = (outcome: Parameters<NonNullable<GatewayEvents['onForward']>>[0]): void => {
    this.calls.inc({ outcome });
  };

  readonly onDecision = (answer: GateAnswer, state: UpstreamState | null): void => {
    const label = answer.status === 'run' ? (answer.heldMs > 0 ? 'held' : 'run') : answer.status;
    this.quota.inc({ answer: label });
    if (answer.status === 'run' && answer.heldMs > 0) this.heldSeconds.inc(answer.heldMs / 1000);
    if (state !== null) {
      this.dayUsed.set(state.count);
      this.dayShare.set(this.dailyBudget === undefined ? 0 : state.count / this.dailyBudget);
    }
  };
}
