import {
  PerRequestHTTPServerTransport,
  PROTOCOL_VERSION_META_KEY,
  type AuthInfo,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type McpServer,
} from '@modelcontextprotocol/server';
import type { IncomingHttpHeaders } from 'node:http';
import { callerLeft, PendingExchanges } from './pending-exchanges';
import { protocolRequestEntry, type RequestEntry } from './protocol-request-entry';
import type { JsonRpcAnswer } from './shared-server-transport';
import type { CallerSignal } from './caller-signal';

/** The one 2026-era revision the SDK (2.4) serves. */
export const MODERN_REVISION = '2026-07-28';

/** The code the SDK answers a missing client capability with, outside its ladder's window too. */
const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;

/** Methods answered on the shared server, and the params field the Mcp-Name header must repeat (none: no header). */
const FAST_METHODS: ReadonlyMap<string, 'name' | 'uri' | undefined> = new Map([
  ['tools/call', 'name'],
  ['resources/read', 'uri'],
  ['tools/list', undefined],
  ['resources/list', undefined],
  ['resources/templates/list', undefined],
  ['server/discover', undefined],
]);

/** Header values the SDK compares verbatim: printable ASCII, no surrounding space (anything else may be encoded). */
const PLAIN_HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * Whether a 2026-era request is one the shared server may answer without the
 * SDK's entry: a single request to one of FAST_METHODS, at the revision the
 * SDK serves, whose standard headers repeat the body exactly. Anything else
 * (a notification, another method, an encoded or absent header, another
 * revision, a request asking for progress) goes through the SDK's
 * `createMcpHandler`, which owns every answer of its validation ladder and
 * streams a handler's related notifications.
 */
export function isPlainModernRequest(headers: IncomingHttpHeaders, body: unknown): body is JSONRPCRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  const { id, method, params } = body as { id?: unknown; method?: unknown; params?: Record<string, unknown> };
  if ((typeof id !== 'string' && typeof id !== 'number') || typeof method !== 'string' || !FAST_METHODS.has(method)) return false;
  const meta = params?._meta as Record<string, unknown> | undefined;
  if (meta?.[PROTOCOL_VERSION_META_KEY] !== MODERN_REVISION || headers['mcp-protocol-version'] !== MODERN_REVISION) return false;
  // A request asking for progress may be answered as a stream, which only the SDK's entry writes (ADR 0038).
  if (meta.progressToken !== undefined) return false;
  if (headers['mcp-method'] !== method) return false;
  const nameField = FAST_METHODS.get(method);
  const nameHeader = headers['mcp-name'];
  if (nameField === undefined) return nameHeader === undefined;
  const value = params?.[nameField];
  return typeof value === 'string' && PLAIN_HEADER_VALUE.test(value) && nameHeader === value;
}

/**
 * The transport of the one shared 2026-era server. It is the SDK's
 * per-request transport by type only: the SDK binds a server to the 2026 era
 * when it connects to one (there is no other public way), and this one,
 * connected once, then carries every exchange the way SharedServerTransport
 * does for the 2025 era: ids of its own inside, the caller's outside, the
 * caller's AuthInfo with each message. An error the protocol layer sends
 * while the message is still being delivered is a rung of the SDK's ladder,
 * whose HTTP status is the SDK entry's to choose: such a request is handed
 * back (`undefined`) to be served through the entry instead; it ran nothing.
 */
class SharedModernTransport extends PerRequestHTTPServerTransport {
  /** Settled with a request's answer, or with undefined when the answer was a ladder rung's. */
  private readonly pending = new PendingExchanges<JsonRpcAnswer | undefined>();
  private dispatching = false;
  /** The protocol layer's request entry past its type dispatch (./protocol-request-entry), once connected. */
  private deliverRequest?: RequestEntry;

  /** Requests go straight to `protocol`'s request entry; false when this SDK has none (they keep going through onmessage). */
  skipTypeDispatch(protocol: unknown): boolean {
    this.deliverRequest = protocolRequestEntry(protocol);
    return this.deliverRequest !== undefined;
  }

  constructor() {
    super({ classification: { era: 'modern', revision: MODERN_REVISION }, responseMode: 'json' });
  }

  override async start(): Promise<void> {}

  override async send(message: JSONRPCMessage): Promise<void> {
    if (!('id' in message) || 'method' in message) return;
    if (!this.pending.has(message.id as number)) return;
    const code = 'error' in message ? message.error.code : undefined;
    const ladder = code !== undefined && (this.dispatching || code === MISSING_REQUIRED_CLIENT_CAPABILITY);
    this.pending.settle(message.id as number, ladder ? undefined : (message as JsonRpcAnswer));
  }

  override async close(): Promise<void> {
    this.pending.clear();
    this.onclose?.();
  }

  /** The answer, or undefined when the SDK's ladder refused the request (serve it through the entry) or the caller left. */
  async request(message: JSONRPCRequest, authInfo: AuthInfo, signal: CallerSignal): Promise<JsonRpcAnswer | undefined> {
    const onmessage = this.onmessage;
    if (onmessage === undefined) throw new Error('SharedModernTransport: no server connected');
    const deliver = this.deliverRequest ?? onmessage;
    const answer = await this.pending.start(
      signal,
      (id) => {
        // The protocol layer answers its gates synchronously, inside this call; handlers always run later.
        this.dispatching = true;
        try {
          deliver({ ...message, id }, { authInfo });
        } finally {
          this.dispatching = false;
        }
      },
      (id) => this.onmessage?.(callerLeft(id), { authInfo }),
    );
    return answer === undefined ? undefined : { ...answer, id: message.id };
  }
}

/** What the shared 2026 server made of a request: its answer, or "ask the SDK's entry" (`fallback`), or nothing (the caller left). */
export type ModernAnswer = { readonly status: 200; readonly body: JsonRpcAnswer } | { readonly status: 'fallback' } | { readonly status: 'abandoned' };

/**
 * The 2026-07-28 era on one server built and connected once (ADR 0022): the
 * plain requests (isPlainModernRequest) are answered here, everything else by
 * the SDK's entry on pooled servers.
 */
export class ModernExchange {
  private readonly transport = new SharedModernTransport();

  private constructor(private readonly server: McpServer) {}

  static async connect(server: McpServer, onerror: (error: Error) => void): Promise<ModernExchange> {
    const exchange = new ModernExchange(server);
    exchange.transport.onerror = onerror;
    await server.connect(exchange.transport);
    exchange.skipsTypeDispatch = exchange.transport.skipTypeDispatch(server.server);
    return exchange;
  }

  /** Whether requests skip the protocol layer's zod type dispatch (./protocol-request-entry). */
  skipsTypeDispatch = false;

  async answer(request: JSONRPCRequest, authInfo: AuthInfo, signal: CallerSignal): Promise<ModernAnswer> {
    const answer = await this.transport.request(request, authInfo, signal);
    if (signal.aborted) return { status: 'abandoned' };
    return answer === undefined ? { status: 'fallback' } : { status: 200, body: answer };
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
