import { NO_UPSTREAM_COSTS, sharedUpstreamCostOf, type ForwardedMethod, type UpstreamCosts } from '../config/upstream-costs';
import { SHARED_QUOTA_NAME } from '../config/upstream-section';
import { encodeKeyPart, type WaitBudget } from '../library';
import { intervalOf, type UpstreamCaller, type UpstreamPolicy, type UpstreamQuotaStore, type UpstreamRejection, type UpstreamState } from '../library/quota';
import { formatReservationId, parseReservationId } from './reservation-id';

/** The one key every token's calls share: the upstream has one quota for the whole service. */
export const UPSTREAM_QUOTA_KEY = 'upstream';
export { SHARED_QUOTA_NAME };

/** A tool's own quota: its own key, beside the shared one, for every token. */
export function toolQuotaKey(tool: string): string {
  return `tool:${encodeKeyPart(tool)}`;
}

const MAX_HOLDS = 4;

/**
 * One forwarded request, as the gate schedules it: who sends it (the verified
 * token id), what it is, and for tools/call which tool. An object, so what a
 * request brings later (a deadline, a reservation it echoes) is one more field.
 */
export interface GateRequest {
  readonly tokenId: string;
  /** Default 'tools/call'. */
  readonly method?: ForwardedMethod;
  /** tools/call: the tool the gateway found in the upstream's list. */
  readonly tool?: string;
  /**
   * The reservation id the call echoes (`_meta["firelimit/reservation"]`),
   * as the client sent it: unchecked input, parsed here. Absent or not ours:
   * the call claims its token's oldest slot that has come, if any.
   */
  readonly reservation?: unknown;
  /** The request's wait budget for its shared stores (docs/adr/0047); absent: each store call gets the full deadline. */
  readonly budget?: WaitBudget;
}

/** One quota a call is scheduled on. */
export interface UpstreamQuota {
  /** SHARED_QUOTA_NAME, or the tool's name for a tool's own quota. */
  readonly name: string;
  readonly key: string;
  readonly policy: UpstreamPolicy;
}

/**
 * What the gate lets through: run now (after a hold, `heldMs` > 0), an answer
 * for the caller naming the quota that gave it, or `cancelled` when the
 * caller went away while held (nothing is forwarded).
 */
export type GateAnswer =
  | { readonly status: 'run'; readonly heldMs: number }
  /** `reservation`: the id to echo to claim exactly this slot (reservation-id.ts). */
  | { readonly status: 'reserved'; readonly quota: string; readonly slotAtMs: number; readonly retryAfterMs: number; readonly reservation: string }
  | { readonly status: 'rejected'; readonly quota: string; readonly reason: UpstreamRejection; readonly retryAfterMs: number }
  | { readonly status: 'cancelled'; readonly heldMs: number };

/** What metrics count; every method is optional so tests can pass `{}`. */
export interface UpstreamQuotaEvents {
  /** One per admitted call that some quota applies to. */
  readonly onDecision?: (answer: GateAnswer) => void;
  /** The state of record a store answered for one quota (null: empty). */
  readonly onState?: (quota: UpstreamQuota, state: UpstreamState | null) => void;
}

export interface UpstreamQuotaGateOptions {
  readonly store: Pick<UpstreamQuotaStore, 'schedule'>;
  /** UPSTREAM_RATE: the quota every forwarded call is scheduled on. */
  readonly shared?: UpstreamPolicy;
  /** The limits file's `upstream.tools`: a tool's own quota, applied as well as the shared one. */
  readonly tools?: ReadonlyMap<string, UpstreamPolicy>;
  /** The limits file's `upstream.costs`: a request that costs 0 is not scheduled on the shared quota. Default: every one costs 1. */
  readonly costs?: UpstreamCosts;
  /** A slot at most this far away is waited for in the request. */
  readonly holdMs: number;
  readonly clock: () => number;
  /** Default: a setTimeout that the caller's signal ends early. Tests pass a fake that advances the clock. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly events?: UpstreamQuotaEvents;
}

/**
 * Hands a forwarded request (tools/call, resources/read, prompts/get,
 * completion/complete: every one that reaches the upstream; the cached lists
 * do not) to the upstream quotas that apply to it: run
 * now, hold it for a near slot and claim exactly that slot (a held call
 * comes back for the slot it was given, not its token's oldest), or answer
 * "reserved" (with the id a returning call echoes) or "rejected" for the
 * client to wait on (docs/adr/0036-upstream-hold.md, docs/adr/0053).
 *
 * A tool with its own quota is scheduled on it and on the shared one, key by
 * key, the one with the longest interval first (the likeliest to make it
 * wait). The call runs only when every quota answered `run` in one pass, so
 * it reaches the upstream right after each of them counted it; a later
 * quota's wait leaves the earlier slot unused, which errs below a limit,
 * never above it (docs/adr/0037-per-tool-upstream-quotas.md).
 */
export class UpstreamQuotaGate {
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The quotas of a tool with none of its own. */
  private readonly sharedOnly: readonly UpstreamQuota[];
  private readonly costs: UpstreamCosts;
  /** Built once per configured tool: a caller naming tools cannot grow it. */
  private readonly byTool = new Map<string, readonly UpstreamQuota[]>();
  /** The same, for a tool whose calls cost 0 on the shared quota: its own quota only. */
  private readonly byFreeTool = new Map<string, readonly UpstreamQuota[]>();

  constructor(private readonly options: UpstreamQuotaGateOptions) {
    this.sleep = options.sleep ?? abortableSleep;
    this.costs = options.costs ?? NO_UPSTREAM_COSTS;
    const shared: UpstreamQuota[] = options.shared === undefined ? [] : [{ name: SHARED_QUOTA_NAME, key: UPSTREAM_QUOTA_KEY, policy: options.shared }];
    this.sharedOnly = shared;
    for (const [tool, policy] of options.tools ?? []) {
      const own = { name: tool, key: toolQuotaKey(tool), policy };
      const quotas = [own, ...shared];
      // Longest interval first; the sort is stable, so a tie keeps the tool's own quota first.
      this.byTool.set(tool, quotas.sort((a, b) => compareIntervals(b.policy, a.policy)));
      this.byFreeTool.set(tool, [own]);
    }
  }

  /** The quotas a request is scheduled on, in the order they are asked: a tool's own (tools/call), and the shared one unless the request costs 0 there. */
  quotasFor(tool: string | undefined, method: ForwardedMethod = 'tools/call'): readonly UpstreamQuota[] {
    const counted = sharedUpstreamCostOf(this.costs, method, tool) > 0;
    if (method === 'tools/call' && tool !== undefined) {
      const own = (counted ? this.byTool : this.byFreeTool).get(tool);
      if (own !== undefined) return own;
    }
    return counted ? this.sharedOnly : [];
  }

  async admit(request: GateRequest, signal?: AbortSignal): Promise<GateAnswer> {
    const method = request.method ?? 'tools/call';
    const quotas = this.quotasFor(request.tool, method);
    // What the call is, for the stores' logs; the holder is the token alone (upstream-holder.ts).
    const caller: UpstreamCaller = { tokenId: request.tokenId, tool: method === 'tools/call' ? (request.tool ?? '') : method };
    // The slot to claim on each key: the echoed one, then, while held, the one this gate was given.
    const claims = new Map<string, number>();
    const echoed = parseReservationId(request.reservation);
    if (echoed !== undefined) claims.set(echoed.key, echoed.slotAtMs);
    if (quotas.length === 0) return { status: 'run', heldMs: 0 };
    const startedAtMs = this.options.clock();
    // Bounded: one hold normally suffices; a clock that lags the state's own can ask for a few more ms.
    let last: GateAnswer | undefined;
    for (let round = 0; round < MAX_HOLDS; round++) {
      const nowMs = this.options.clock();
      if (signal?.aborted === true) return this.report({ status: 'cancelled', heldMs: nowMs - startedAtMs });
      const answer = await this.pass(quotas, caller, claims, nowMs, startedAtMs, request.budget);
      // Held only while the whole wait, so far and to come, stays within the hold.
      if (answer.status !== 'reserved' || nowMs - startedAtMs + answer.retryAfterMs > this.options.holdMs) {
        return this.report(answer);
      }
      last = answer;
      // Held: this call comes back for exactly the slot it was given, not its token's oldest.
      claims.set(quotaKeyOf(quotas, answer.quota), answer.slotAtMs);
      await this.sleep(answer.retryAfterMs, signal);
    }
    if (signal?.aborted === true) return this.report({ status: 'cancelled', heldMs: this.options.clock() - startedAtMs });
    // Still not our turn after the holds: the caller is told its slot, as if it had not been held.
    return this.report(last as GateAnswer);
  }

  /** Every quota in order until one does not answer `run`. */
  private async pass(quotas: readonly UpstreamQuota[], caller: UpstreamCaller, claims: ReadonlyMap<string, number>, nowMs: number, startedAtMs: number, budget: WaitBudget | undefined): Promise<GateAnswer> {
    for (const quota of quotas) {
      const claimSlotAtMs = claims.get(quota.key);
      const { outcome, state } = await this.options.store.schedule(quota.key, nowMs, claimSlotAtMs === undefined ? caller : { ...caller, claimSlotAtMs }, quota.policy, undefined, budget);
      this.options.events?.onState?.(quota, state);
      if (outcome.status === 'reserved') {
        const reservation = formatReservationId({ key: quota.key, slotAtMs: outcome.slotAtMs });
        return { status: 'reserved', quota: quota.name, slotAtMs: outcome.slotAtMs, retryAfterMs: outcome.retryAfterMs, reservation };
      }
      if (outcome.status === 'rejected') return { status: 'rejected', quota: quota.name, reason: outcome.reason, retryAfterMs: outcome.retryAfterMs };
    }
    return { status: 'run', heldMs: Math.max(0, nowMs - startedAtMs) };
  }

  private report(answer: GateAnswer): GateAnswer {
    this.options.events?.onDecision?.(answer);
    return answer;
  }
}

/** The key of the quota named `name` among those a call is scheduled on. */
function quotaKeyOf(quotas: readonly UpstreamQuota[], name: string): string {
  return (quotas.find((quota) => quota.name === name) as UpstreamQuota).key;
}

/** a's interval against b's, compared exactly: numerator_a × denominator_b against numerator_b × denominator_a. */
function compareIntervals(a: UpstreamPolicy, b: UpstreamPolicy): number {
  const x = intervalOf(a);
  const y = intervalOf(b);
  // BigInt: the products pass 2^53 for a day-long window.
  const left = BigInt(x.numerator) * BigInt(y.denominator);
  const right = BigInt(y.numerator) * BigInt(x.denominator);
  return Number(left > right) - Number(left < right);
}

/** setTimeout that `signal` ends early; exported for its tests. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
