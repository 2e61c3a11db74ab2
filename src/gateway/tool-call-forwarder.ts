import { ProtocolError, type CallToolResult, type LoggingMessageNotification, type Progress } from '@modelcontextprotocol/client';
import type { Dispatcher } from 'undici';
import { ForwardedExchange, notMcp } from './forwarded-exchange';
import { UpstreamError } from './upstream-error';

/** The session a forwarded call goes on, as the SDK client's handshake left it. */
export interface ForwardSession {
  /** Mcp-Session-Id; undefined on a stateless upstream. */
  readonly sessionId: string | undefined;
  /** The protocol version the handshake agreed (a 2025-era one: ./upstream-client decides). */
  readonly protocolVersion: string;
  /** The caller's public token id, for TOKEN_ID_HEADER; undefined on no caller's behalf. */
  readonly tokenId: string | undefined;
}

/** What the upstream says about the call while it runs (see CallRelay in ./gateway). */
export interface ForwardRelay {
  readonly onprogress?: (progress: Progress) => void;
  readonly onlog?: (params: LoggingMessageNotification['params']) => void;
}

export interface ToolCallForwarderOptions {
  /** undici's Pool for the upstream's origin: keep-alive connections, no web streams. */
  readonly pool: Dispatcher;
  /** The upstream URL's path and query. */
  readonly path: string;
  /** The configured Authorization for the upstream, the only credential it is sent. */
  readonly authorization: string | undefined;
  readonly tokenIdHeader: string;
  /** UPSTREAM_TIMEOUT_MS: the call and the reading of its answer, from the moment it is sent. */
  readonly deadlineMs: number;
  /** Past this many bytes the answer is cut off (./bounded-fetch UPSTREAM_MAX_ANSWER_BYTES). */
  readonly maxAnswerBytes: number;
  /** The upstream said one of its lists changed, on the call's own stream. */
  readonly onListChanged?: () => void;
}

/**
 * Request ids of forwarded calls start here, far above the SDK client's own
 * counter on the same session (it starts at 0 for the handshake and the
 * lists), so an answer is never taken for another request's.
 */
const FIRST_ID = 1_000_000_000_000;

const LIST_CHANGED = new Set(['notifications/tools/list_changed', 'notifications/resources/list_changed', 'notifications/prompts/list_changed']);

/** What the SDK client's fallbackRequestHandler answers, word for word (ADR 0039). */
const notRelayed = (method: string): string => `${method} is not relayed: firelimit, the gateway in front of this server, does not pass requests to its callers`;

type Message = Readonly<Record<string, unknown>>;

/**
 * One tools/call sent upstream and its answer read, on undici's pool
 * (docs/dependencies.md) through `dispatch` (./forwarded-exchange): the
 * JSON-RPC request is written as bytes, the answer (JSON, or the events of an
 * SSE stream) parsed once, with no fetch, web or body stream, SDK transport
 * or zod parse per call. It keeps what
 * the SDK client did for the call: the deadline and the byte bound of a
 * hostile upstream (ADR 0041), progress and log messages relayed, requests
 * from the upstream refused at once (ADR 0039), a caller who went away
 * cancelled upstream, and the SDK's own error types (SdkHttpError,
 * ProtocolError) thrown, so ./upstream-error and ./forgotten-session read
 * them as before. The session itself (handshake, standalone stream, DELETE)
 * stays the SDK client's.
 */
export class ToolCallForwarder {
  private nextId = FIRST_ID;

  constructor(private readonly options: ToolCallForwarderOptions) {}

  call(session: ForwardSession, params: { readonly name: string; readonly arguments?: Record<string, unknown> }, signal: AbortSignal | undefined, relay: ForwardRelay): Promise<CallToolResult> {
    const id = this.nextId++;
    const { onprogress, onlog } = relay;
    const request = { jsonrpc: '2.0', id, method: 'tools/call', params: onprogress === undefined ? params : { ...params, _meta: { progressToken: id } } };
    const headers = this.headersOf(session);
    const { deadlineMs, maxAnswerBytes } = this.options;
    return new Promise<CallToolResult>((resolve, reject) => {
      let settled = false;
      const end = (): void => {
        settled = true;
        signal?.removeEventListener('abort', onCallerAbort);
      };
      const fail = (error: unknown): void => {
        // After the answer: what is left of its stream is cut (too large, or still open at the deadline).
        if (settled) return exchange.cut(error);
        end();
        clearTimeout(timer);
        exchange.cut(error);
        reject(error);
      };
      const onMessage = (message: unknown): void => {
        if (settled) return;
        if (typeof message !== 'object' || message === null || Array.isArray(message) || (message as Message).jsonrpc !== '2.0') {
          return fail(notMcp());
        }
        const m = message as Message;
        if (typeof m.method === 'string') return this.onUpstreamMessage(m, id, headers, onprogress, onlog);
        if (m.id !== id) return;
        if (typeof m.error === 'object' && m.error !== null) {
          const { code, message: text, data } = m.error as Message;
          if (typeof code !== 'number' || typeof text !== 'string') return fail(notMcp());
          return fail(ProtocolError.fromError(code, text, data));
        }
        const result = resultOf(m.result);
        if (result === undefined) return fail(notMcp());
        end();
        exchange.answered();
        // The rest of an event stream is read to its end, so its connection is kept, but no longer than the deadline.
        if (exchange.isClosed) clearTimeout(timer);
        resolve(result);
      };
      const onClosed = (): void => {
        // Unanswered, the call still waits for its deadline (an answer may only come on a stream the SDK client reads).
        if (settled) clearTimeout(timer);
      };
      const exchange = new ForwardedExchange({ onMessage, fail, onClosed }, maxAnswerBytes);
      const onCallerAbort = (): void => {
        fail(signal?.reason);
        this.notify(headers, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: String(signal?.reason) } });
      };
      const timer = setTimeout(() => fail(new UpstreamError('timeout', `the upstream MCP server did not answer within ${deadlineMs} ms`)), deadlineMs);
      if (signal?.aborted === true) return onCallerAbort();
      signal?.addEventListener('abort', onCallerAbort, { once: true });
      this.options.pool.dispatch({ path: this.options.path, method: 'POST', headers, body: JSON.stringify(request) }, exchange);
    });
  }

  /** A notification or request from the upstream on the call's stream. */
  private onUpstreamMessage(m: Message, id: number, headers: Record<string, string>, onprogress: ForwardRelay['onprogress'], onlog: ForwardRelay['onlog']): void {
    const params = m.params as Message | undefined;
    if (m.id !== undefined && m.id !== null) {
      // A request to firelimit's client: a ping is answered, anything else refused at once, never relayed to the caller.
      const answer = m.method === 'ping' ? { result: {} } : { error: { code: -32601, message: notRelayed(m.method as string) } };
      return this.notify(headers, { jsonrpc: '2.0', id: m.id, ...answer });
    }
    if (m.method === 'notifications/progress') {
      if (onprogress !== undefined && params?.progressToken === id && typeof params.progress === 'number') onprogress(params as unknown as Progress);
      return;
    }
    if (m.method === 'notifications/message') {
      if (onlog !== undefined && params !== undefined) onlog(params as unknown as LoggingMessageNotification['params']);
      return;
    }
    if (LIST_CHANGED.has(m.method as string)) this.options.onListChanged?.();
  }

  /** Sends a message that gets no answer (a notification, or our answer to the upstream's request); failures do not matter. */
  private notify(headers: Record<string, string>, message: object): void {
    this.options.pool.request({ path: this.options.path, method: 'POST', headers, body: JSON.stringify(message), headersTimeout: this.options.deadlineMs, bodyTimeout: this.options.deadlineMs }).then(
      (response) => void response.body.resume(),
      () => undefined,
    );
  }

  private headersOf(session: ForwardSession): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': session.protocolVersion,
    };
    if (session.sessionId !== undefined) headers['mcp-session-id'] = session.sessionId;
    if (this.options.authorization !== undefined) headers.authorization = this.options.authorization;
    if (session.tokenId !== undefined) headers[this.options.tokenIdHeader.toLowerCase()] = session.tokenId;
    return headers;
  }
}

/** A tools/call result as CallToolResultSchema takes it (content defaults to none); undefined when it is not one. */
function resultOf(result: unknown): CallToolResult | undefined {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return undefined;
  const r = result as Record<string, unknown>;
  if (r.content === undefined) r.content = [];
  else if (!Array.isArray(r.content) || !r.content.every((block) => typeof block === 'object' && block !== null && typeof (block as Message).type === 'string')) return undefined;
  if (r.isError !== undefined && typeof r.isError !== 'boolean') return undefined;
  if (r.structuredContent !== undefined && (typeof r.structuredContent !== 'object' || r.structuredContent === null || Array.isArray(r.structuredContent))) return undefined;
  return result as CallToolResult;
}
