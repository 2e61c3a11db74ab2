import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { buildUpstreamMcpServer, recordingRequests, type UpstreamHit } from './upstream-mcp-server';

/** A JSON-RPC request as the upstream received it. */
export interface RpcBody {
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: { readonly name?: string; readonly arguments?: unknown; readonly _meta?: Readonly<Record<string, unknown>> } & Readonly<Record<string, unknown>>;
}

/** Answers one request the way a broken or hostile server would. */
export type Misbehaviour = (req: IncomingMessage, res: ServerResponse, body: RpcBody) => void;

export type ListTools = () => readonly unknown[] | { readonly tools: readonly unknown[]; readonly nextCursor?: string };

export interface HostileUpstream {
  readonly url: string;
  readonly hits: UpstreamHit[];
  calls(): UpstreamHit[];
  /** tools/call of a tool named here is answered by its misbehaviour, not by the SDK; the tool is listed like any other. */
  readonly onCall: ReadonlyMap<string, Misbehaviour>;
  /** Set: tools/list is answered with what it returns (a page with a next cursor, or just the tools), the SDK server is not asked. */
  listTools: ListTools | undefined;
  /** Sockets now open to this server, from any client. */
  openSockets(): number;
  close(): Promise<void>;
}

/**
 * The stub upstream (a real SDK 2.x server, ./upstream-mcp-server) with some
 * tools whose calls are answered by hand, badly: for the gateway's tests of
 * what a misbehaving upstream can do to firelimit.
 */
export async function startHostileUpstream(misbehaviours: Readonly<Record<string, Misbehaviour>>): Promise<HostileUpstream> {
  const onCall = new Map(Object.entries(misbehaviours));
  const state: { listTools: ListTools | undefined } = { listTools: undefined };
  // With a list of its own, the SDK server only answers the handshake: the odd names are not registered with it.
  const handler = toNodeHandler(createMcpHandler(() => buildUpstreamMcpServer(state.listTools === undefined ? [...onCall.keys()] : []), { legacy: 'stateless' }));
  const hits: UpstreamHit[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer(
    recordingRequests(hits, Date.now, (req, res, raw) => {
      const body = (raw ?? {}) as RpcBody;
      const bad = body.method === 'tools/call' && typeof body.params?.name === 'string' ? onCall.get(body.params.name) : undefined;
      if (bad !== undefined) return bad(req, res, body);
      if (body.method === 'tools/list' && state.listTools !== undefined) {
        const page = state.listTools();
        return answerJson(res, body.id, Array.isArray(page) ? { tools: page } : page);
      }
      void handler(req, res, raw);
    }),
  );
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    hits,
    calls: () => hits.filter((hit) => hit.method === 'tools/call'),
    onCall,
    get listTools() {
      return state.listTools;
    },
    set listTools(list) {
      state.listTools = list;
    },
    openSockets: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A JSON-RPC result as a plain JSON response. */
export function answerJson(res: ServerResponse, id: string | number | undefined, result: unknown): void {
  res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: id ?? null, result }));
}

/** One SSE event carrying a JSON-RPC message, as a Streamable HTTP server writes it. */
export function sseEvent(message: unknown): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
