import { ProtocolError, type CallToolResult, type Tool } from '@modelcontextprotocol/server';
import type { ForwardedMethod } from '../config/upstream-costs';
import { SHARED_QUOTA_NAME } from '../gateway/upstream-quota-gate';
import type { QuotaRefusal } from '../gateway/upstream-quota-refusal';
import { JsonRpcCode } from '../library/express';
import type { UpstreamRejection } from '../library/quota';
import { rejectedRetryWords, reservedRetryWords } from './retry-words';

/**
 * The upstream quota's "reserved" and "rejected" answers, in a form every
 * client can read (docs/adr/0035-gateway-quota-answers.md): words for the
 * model, and the same figures to the millisecond for code.
 */

const REJECTION_WORDS: Readonly<Record<UpstreamRejection, string>> = {
  daily_budget: "today's upstream budget is spent",
  max_wait: 'every slot within the longest wait is taken',
  reservations_full: 'too many callers are already waiting',
  token_reservations_full: 'your token already holds its share of the waiting slots (come back for them first)',
  unavailable: 'the quota cannot be checked while its database is unreachable',
};

/** Where a quota answer's figures ride in `_meta`, for clients that cannot use structuredContent. */
export const QUOTA_META_KEY = 'firelimit/upstreamQuota';

/** The figures of an answer, the same wherever they are carried. */
export function quotaFigures(answer: QuotaRefusal, nowMs: number): Record<string, unknown> {
  if (answer.status === 'reserved') return { status: 'reserved', retryAfterMs: answer.retryAfterMs, slotAtMs: answer.slotAtMs, quota: answer.quota, reservation: answer.reservation };
  if (answer.status === 'rejected') return { status: 'rejected', reason: answer.reason, retryAfterMs: answer.retryAfterMs, retryAtMs: nowMs + answer.retryAfterMs, quota: answer.quota };
  return { status: 'cancelled', quota: SHARED_QUOTA_NAME };
}

/** What to call again, for the words: a tool, or a request such as "resources/read of file:///x". */
interface Subject {
  readonly noun: string;
  /** "call echo again", then "in N". */
  readonly again: string;
  /** After the wait: " with the same arguments", or nothing. */
  readonly same: string;
}

function words(answer: QuotaRefusal, subject: Subject, graceMs: number): string {
  if (answer.status === 'cancelled') return `The ${subject.noun} was cancelled while it waited for its upstream slot; it did not run.`;
  const which = answer.quota === SHARED_QUOTA_NAME ? `The upstream behind ${subject.noun} is at its shared rate limit` : `The ${answer.quota} tool is at its own upstream rate limit`;
  if (answer.status === 'reserved') {
    return `${which}. A slot is reserved for you at ${new Date(answer.slotAtMs).toISOString()}: ` +
      `${subject.again} in ${reservedRetryWords(answer.retryAfterMs, graceMs)}${subject.same} (not earlier, and within ${graceMs} ms after) and it will run. The reservation lapses if you come back later.`;
  }
  const whose = answer.quota === SHARED_QUOTA_NAME ? `The upstream behind ${subject.noun}` : `The ${answer.quota} tool's own upstream quota`;
  return `${whose} cannot take this call: ${REJECTION_WORDS[answer.reason]}. Try again in ${rejectedRetryWords(answer.retryAfterMs)}.`;
}

/**
 * A tool result for a forwarded tools/call the quota did not run. A tool
 * with an `outputSchema` gets its figures in `_meta` only: a client that
 * validates structuredContent against the schema (SDK 1.x, the Inspector)
 * would throw on ours, and the caller would never learn its slot. Without
 * a schema they ride in `structuredContent` too, as before.
 */
export function quotaToolResult(answer: QuotaRefusal, tool: Tool, nowMs: number, graceMs: number): CallToolResult {
  const figures = quotaFigures(answer, nowMs);
  const text = words(answer, { noun: answer.status === 'cancelled' ? `${tool.name} call` : tool.name, again: `call ${tool.name} again`, same: ' with the same arguments' }, graceMs);
  return {
    isError: true,
    content: [{ type: 'text', text }],
    ...(tool.outputSchema === undefined ? { structuredContent: figures } : {}),
    _meta: { [QUOTA_META_KEY]: figures },
  };
}

/** A JSON-RPC rate-limit error for a forwarded request with no tool result (resources/read, prompts/get, completion/complete). */
export function quotaProtocolError(answer: QuotaRefusal, method: ForwardedMethod, nowMs: number, graceMs: number): ProtocolError {
  const text = words(answer, { noun: `${method} request`, again: `send the same ${method} again`, same: '' }, graceMs);
  return new ProtocolError(JsonRpcCode.RateLimited, text, { ...quotaFigures(answer, nowMs), method });
}
