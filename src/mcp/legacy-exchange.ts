import type { AuthInfo, JSONRPCRequest, McpServer } from '@modelcontextprotocol/server';
import { readsResource, withResourceNotFound2025 } from './resource-not-found';
import { SharedServerTransport, type JsonRpcAnswer, type RelatedSink } from './shared-server-transport';
import type { CallerSignal } from './caller-signal';

/**
 * What a 2025-era POST is answered with: a JSON body (one answer, or a batch
 * of them), 202 when it carried no request, or nothing when the caller went
 * away first.
 */
export type LegacyAnswer =
  | { readonly status: 200; readonly body: JsonRpcAnswer | JsonRpcAnswer[] }
  | { readonly status: 202 }
  | { readonly status: 'abandoned' };

/**
 * The 2025 era (initialize handshake, 2025-03-26 .. 2025-11-25) on one server
 * built and connected once, at boot. The SDK keeps the era as instance state,
 * and for 2025-era traffic it is the same for every caller (no version in
 * that range changes the wire shape), so one instance serves all of them;
 * what differs per call, the caller's token and decision, travels with the
 * request (./call-context).
 *
 * The checks the SDK's per-request HTTP transport would make (Accept,
 * Content-Type, JSON-RPC shape, batch size, one initialize per batch, the
 * protocol-version header) are made before the limiter, stricter, by
 * src/http; what reaches this is a shape-checked message or batch. An unknown
 * resource is answered with the 2025 specs' -32002 (./resource-not-found).
 *
 * Client notifications are acknowledged (202) and not passed on: on a shared
 * server a `notifications/cancelled` naming a request id could cancel another
 * caller's request, and no other client notification means anything to a
 * stateless server that sends no requests of its own.
 */
export class LegacyExchange {
  private readonly transport = new SharedServerTransport();

  private constructor(private readonly server: McpServer) {}

  static async connect(server: McpServer, onerror: (error: Error) => void): Promise<LegacyExchange> {
    const exchange = new LegacyExchange(server);
    exchange.transport.onerror = onerror;
    await server.connect(exchange.transport);
    exchange.skipsTypeDispatch = exchange.transport.skipTypeDispatch(server.server);
    return exchange;
  }

  /** Whether requests skip the protocol layer's zod type dispatch (SharedServerTransport.skipTypeDispatch). */
  skipsTypeDispatch = false;

  /** `related` hears what a handler says about a single request before answering it; a batch's answers come as one JSON array. */
  async answer(body: unknown, authInfo: AuthInfo, signal: CallerSignal, related?: RelatedSink): Promise<LegacyAnswer> {
    const messages: readonly unknown[] = Array.isArray(body) ? body : [body];
    const sink = Array.isArray(body) ? undefined : related;
    const answers: Promise<JsonRpcAnswer | undefined>[] = [];
    for (const message of messages) {
      const m = message as { method?: unknown; id?: unknown };
      // A posted response (no request of ours waits for one) or a notification: acknowledged, not passed on.
      if (typeof m.method !== 'string' || m.id === undefined) continue;
      answers.push(this.transport.request(message as JSONRPCRequest, authInfo, signal, sink));
    }
    if (answers.length === 0) return { status: 202 };
    const settled = (await Promise.all(answers)).filter((a): a is JsonRpcAnswer => a !== undefined);
    if (signal.aborted) return { status: 'abandoned' };
    const fixed = readsResource(body) ? (withResourceNotFound2025(settled) as JsonRpcAnswer[]) : settled;
    return { status: 200, body: Array.isArray(body) ? fixed : (fixed[0] as JsonRpcAnswer) };
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
