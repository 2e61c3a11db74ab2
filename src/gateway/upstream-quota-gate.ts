import type { UpstreamCaller } from '../limiter/upstream/upstream-holder';
import type { UpstreamPolicy } from '../limiter/upstream/upstream-policy';
import type { UpstreamQuotaStore } from '../limiter/upstream/upstream-quota-store';
import type { UpstreamRejection } from '../limiter/upstream/upstream-schedule';
import type { UpstreamState } from '../limiter/upstream/upstream-state';

/** The one key every token's calls share: the upstream has one quota for the whole service. */
export const UPSTREAM_QUOTA_KEY = 'upstream';

const MAX_HOLDS = 4;

/** What the gate lets through: run now (after a hold, `heldMs` > 0), or an answer for the caller. */
export type GateAnswer =
  | { readonly status: 'run'; readonly heldMs: number }
  | { readonly status: 'reserved'; readonly slotAtMs: number; readonly retryAfterMs: number }
  | { readonly status: 'rejected'; readonly reason: UpstreamRejection; readonly retryAfterMs: number };

/** What metrics count; every method is optional so tests can pass `{}`. */
export interface UpstreamQuotaEvents {
  readonly onDecision?: (answer: GateAnswer, state: UpstreamState | null) => void;
}

export interface UpstreamQuotaGateOptions {
  readonly store: Pick<UpstreamQuotaStore, 'schedule'>;
  readonly policy: UpstreamPolicy;
  /** A slot at most this far away is waited for in the request. */
  readonly holdMs: number;
  readonly clock: () => number;
  /** Default setTimeout; tests pass a fake that advances the clock. */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly events?: UpstreamQuotaEvents;
}

/**
 * Hands a forwarded tools/call to the shared quota: run now, hold it for a
 * near slot and claim it (the same holder coming back at its slot runs
 * without taking another), or answer "reserved"/"rejected" for the client to
 * wait on (docs/adr/0036-upstream-hold.md).
 */
export class UpstreamQuotaGate {
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: UpstreamQuotaGateOptions) {
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  get policy(): UpstreamPolicy {
    return this.options.policy;
  }

  async admit(caller: UpstreamCaller): Promise<GateAnswer> {
    const startedAtMs = this.options.clock();
    // Bounded: one hold normally suffices; a clock that lags the state's own can ask for a few more ms.
    let last: GateAnswer | undefined;
    for (let round = 0; round < MAX_HOLDS; round++) {
      const nowMs = this.options.clock();
      const { outcome, state } = await this.options.store.schedule(UPSTREAM_QUOTA_KEY, nowMs, caller, this.options.policy);
      if (outcome.status === 'run') return this.report({ status: 'run', heldMs: Math.max(0, nowMs - startedAtMs) }, state);
      if (outcome.status === 'rejected') return this.report(outcome, state);
      if (outcome.retryAfterMs > this.options.holdMs || nowMs - startedAtMs + outcome.retryAfterMs > this.options.holdMs) return this.report(outcome, state);
      last = outcome;
      await this.sleep(outcome.retryAfterMs);
    }
    // Still not our turn after the holds: the caller is told its slot, as if it had not been held.
    return this.report(last as GateAnswer, null);
  }

  private report(answer: GateAnswer, state: UpstreamState | null): GateAnswer {
    this.options.events?.onDecision?.(answer, state);
    return answer;
  }
}
