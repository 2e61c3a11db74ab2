import type {
  AuthInfo,
  JSONRPCNotification,
  JSONRPCErrorResponse,
  JSONRPCMessage,
  JSONRPCRequest,
  JSONRPCResultResponse,
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/server';
import { callerLeft, PendingExchanges } from './pending-exchanges';
import { protocolRequestEntry, type RequestEntry } from './protocol-request-entry';
import type { CallerSignal } from './caller-signal';

export type JsonRpcAnswer = JSONRPCResultResponse | JSONRPCErrorResponse;

/** Where a handler's notifications about its own request go: that request's response stream (./related-stream). */
export type RelatedSink = (notification: JSONRPCNotification) => void;

/**
 * The transport of the one 2025-era server: connected once, at boot, and
 * carrying every request that server answers, concurrently. Each request is
 * handed to the SDK under an id of our own (two clients both sending id 1
 * must not meet in the protocol layer's bookkeeping) and its answer goes back
 * under the caller's id. Each call's AuthInfo rides along as the SDK's
 * message extra, so every handler sees its own caller.
 *
 * What a stateless exchange has no channel for, the server may not send:
 * requests to the client, and notifications that relate to no request, are
 * dropped, as the SDK's own stateless transport drops them. A notification
 * about a request (the SDK's ctx.mcpReq.notify) goes to that request's
 * sink, when its exchange gave one (a stream it may be written on).
 */
export class SharedServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: { authInfo?: AuthInfo }) => void;

  private readonly pending = new PendingExchanges<JsonRpcAnswer>();
  private readonly related = new Map<number, RelatedSink>();
  /** The protocol layer's request entry past its type dispatch (./protocol-request-entry), once connected. */
  private deliverRequest?: RequestEntry;

  /** Requests go straight to `protocol`'s request entry; false when this SDK has none (they keep going through onmessage). */
  skipTypeDispatch(protocol: unknown): boolean {
    this.deliverRequest = protocolRequestEntry(protocol);
    return this.deliverRequest !== undefined;
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (!('id' in message)) {
      const sink = typeof options?.relatedRequestId === 'number' ? this.related.get(options.relatedRequestId) : undefined;
      sink?.(message as JSONRPCNotification);
      return;
    }
    if ('method' in message) return;
    if (this.pending.settle(message.id as number, message as JsonRpcAnswer)) this.related.delete(message.id as number);
  }

  async close(): Promise<void> {
    this.pending.clear();
    this.related.clear();
    this.onclose?.();
  }

  /**
   * Answers one request; `signal` abandons it (the caller went away), so
   * nothing waits for an answer no one reads. `related` hears the
   * notifications the handler sends about this request before its answer.
   */
  async request(message: JSONRPCRequest, authInfo: AuthInfo, signal: CallerSignal, related?: RelatedSink): Promise<JsonRpcAnswer | undefined> {
    const onmessage = this.onmessage;
    if (onmessage === undefined) throw new Error('SharedServerTransport: no server connected');
    const deliver = this.deliverRequest ?? onmessage;
    const answer = await this.pending.start(
      signal,
      (id) => {
        if (related !== undefined) this.related.set(id, related);
        deliver({ ...message, id }, { authInfo });
      },
      (id) => {
        this.related.delete(id);
        this.onmessage?.(callerLeft(id), { authInfo });
      },
    );
    return answer === undefined ? undefined : { ...answer, id: message.id };
  }

  /** Requests handed to the server and not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }
}
