import type {
  AuthInfo,
  JSONRPCErrorResponse,
  JSONRPCMessage,
  JSONRPCRequest,
  JSONRPCResultResponse,
  Transport,
} from '@modelcontextprotocol/server';

export type JsonRpcAnswer = JSONRPCResultResponse | JSONRPCErrorResponse;

/**
 * The transport of the one 2025-era server: connected once, at boot, and
 * carrying every request that server answers, concurrently. Each request is
 * handed to the SDK under an id of our own (two clients both sending id 1
 * must not meet in the protocol layer's bookkeeping) and its answer goes back
 * under the caller's id. Each call's AuthInfo rides along as the SDK's
 * message extra, so every handler sees its own caller.
 *
 * What a stateless JSON exchange has no channel for, the server may not
 * send: notifications and requests to the client are dropped, as the SDK's
 * own stateless transport in JSON mode drops them.
 */
export class SharedServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: { authInfo?: AuthInfo }) => void;

  private nextId = 0;
  private readonly pending = new Map<number, (answer: JsonRpcAnswer) => void>();

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (!('id' in message) || 'method' in message) return;
    const settle = this.pending.get(message.id as number);
    if (settle === undefined) return;
    this.pending.delete(message.id as number);
    settle(message as JsonRpcAnswer);
  }

  async close(): Promise<void> {
    this.pending.clear();
    this.onclose?.();
  }

  /** Answers one request; `signal` abandons it (the caller went away), so nothing waits for an answer no one reads. */
  request(message: JSONRPCRequest, authInfo: AuthInfo, signal: AbortSignal): Promise<JsonRpcAnswer | undefined> {
    const onmessage = this.onmessage;
    if (onmessage === undefined) return Promise.reject(new Error('SharedServerTransport: no server connected'));
    const id = ++this.nextId;
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve(undefined);
        return;
      }
      const abandon = (): void => {
        this.pending.delete(id);
        resolve(undefined);
        // The handler is told as the SDK tells it of a cancel, through its request signal: a held gateway call is then not forwarded.
        this.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'the caller disconnected' } }, { authInfo });
      };
      signal.addEventListener('abort', abandon, { once: true });
      this.pending.set(id, (answer) => {
        signal.removeEventListener('abort', abandon);
        resolve({ ...answer, id: message.id });
      });
      onmessage({ ...message, id }, { authInfo });
    });
  }

  /** Requests handed to the server and not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }
}
