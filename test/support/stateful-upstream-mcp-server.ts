import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { buildUpstreamMcpServer, recordingRequests, type UpstreamHit } from './upstream-mcp-server';

/** One client session on the stateful upstream: its server (to change its tools at runtime) and its standalone GET stream. */
export interface UpstreamSession {
  readonly id: string;
  readonly server: McpServer;
  /** The session's GET response, once the client opened it; undefined before. */
  standaloneStream: ServerResponse | undefined;
}

export interface StatefulUpstream {
  readonly url: string;
  /** Every session, in the order the handshakes arrived. */
  readonly sessions: UpstreamSession[];
  /** Every request, in arrival order. */
  readonly hits: UpstreamHit[];
  /** Only the tools/call requests. */
  calls(): UpstreamHit[];
  /** Forgets every session, as a restarted process would: their ids are answered 404 from now on. */
  restart(): void;
  close(): Promise<void>;
}

/**
 * The other kind of MCP server a gateway may front: a real SDK 2.x server
 * with sessions (Mcp-Session-Id), one McpServer per session, and the
 * standalone GET SSE stream on which a session's server sends what relates
 * to no request, such as notifications/tools/list_changed. Its `announce`
 * tool logs once on that stream and once on the call.
 */
export async function startStatefulUpstream(): Promise<StatefulUpstream> {
  const sessions: UpstreamSession[] = [];
  const transports = new Map<string, NodeStreamableHTTPServerTransport>();
  const handle = async (req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> => {
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (existing === undefined && sessionId !== undefined) {
      // What the spec has a server answer for a session it does not know: the client is to start a new one.
      res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
      return;
    }
    if (existing !== undefined) {
      if (req.method === 'GET') {
        const session = sessions.find((s) => s.id === sessionId);
        if (session !== undefined) session.standaloneStream = res;
      }
      await existing.handleRequest(req, res, body);
      return;
    }
    const server = buildUpstreamMcpServer();
    let session: UpstreamSession | undefined;
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, transport);
        session = { id, server, standaloneStream: undefined };
        sessions.push(session);
      },
    });
    server.registerTool(
      'announce',
      { description: 'Once its session has a standalone stream, logs there (unrelated to this call), then on this call.', inputSchema: z.object({ label: z.string() }) },
      async ({ label }, ctx) => {
        while (session?.standaloneStream?.headersSent !== true) await new Promise((resolve) => setTimeout(resolve, 5));
        await server.server.sendLoggingMessage({ level: 'info', data: { label, on: 'session' } });
        await ctx.mcpReq.log('info', { label, on: 'call' });
        // Long enough for the session's message to be read by the gateway while this call is still open.
        await new Promise((resolve) => setTimeout(resolve, 100));
        return { content: [{ type: 'text', text: 'announced' }] };
      },
    );
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };
  const hits: UpstreamHit[] = [];
  const server: Server = createServer(recordingRequests(hits, Date.now, (req, res, body) => void handle(req, res, body)));
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    sessions,
    hits,
    calls: () => hits.filter((hit) => hit.method === 'tools/call'),
    restart: () => {
      for (const transport of transports.values()) void transport.close();
      transports.clear();
    },
    close: async () => {
      await Promise.allSettled([...transports.values()].map((t) => t.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
