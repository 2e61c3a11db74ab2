import type { ForwardedMethod } from '../config/upstream-costs';
import type { GateAnswer } from './upstream-quota-gate';

/** The quota's answer instead of a call, for a request that has no tool result to carry it in. */
export type QuotaRefusal = Exclude<GateAnswer, { status: 'run' }>;

/**
 * Thrown by the Gateway for a resources/read, prompts/get or
 * completion/complete that the upstream quota did not let run: such a request
 * has no result a "reserved" answer fits in, so the MCP layer answers it as a
 * JSON-RPC rate-limit error with the same fields a tool result carries.
 * Nothing was forwarded.
 */
export class UpstreamQuotaRefusal extends Error {
  constructor(
    readonly answer: QuotaRefusal,
    readonly method: ForwardedMethod,
  ) {
    super(`upstream quota: ${answer.status}`);
    this.name = 'UpstreamQuotaRefusal';
  }
}
