import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

/** One HTTP request the upstream received, and the tools/call it carried, if any. */
export interface UpstreamHit {
  readonly atMs: number;
  readonly headers: IncomingHttpHeaders;
  readonly method: string | undefined;
  readonly tool: string | undefined;
  readonly args: unknown;
}

export interface UpstreamStub {
  readonly url: string;
  readonly port: number;
  /** Every request, in arrival order (the body's JSON-RPC method, and the tool for tools/call). */
  readonly hits: UpstreamHit[];
  /** Only the tools/call requests. */
  calls(): UpstreamHit[];
  /** Tools the upstream lists from its next request on (one server is built per request). */
  readonly extraTools: string[];
  close(): Promise<void>;
}

export const UPSTREAM_TOOL_ANNOTATIONS = { readOnlyHint: true, openWorldHint: false } as const;

/** A real SDK 2.x server: an `echo` tool with input/output schemas and annotations, a `slow` one, a resource and a prompt. */
export function buildUpstreamMcpServer(extraTools: readonly string[] = []): McpServer {
  const server = new McpServer({ name: 'stub-upstream', version: '1.0.0' });
  for (const name of extraTools) server.registerTool(name, { description: `added later: ${name}` }, () => ({ content: [{ type: 'text', text: name }] }));
  server.registerTool(
    'echo',
    {
      title: 'Echo',
      description: 'Repeats the text it is given.',
      inputSchema: z.object({ text: z.string().describe('what to repeat') }),
      outputSchema: z.object({ echoed: z.string() }),
      annotations: UPSTREAM_TOOL_ANNOTATIONS,
    },
    ({ text }) => ({ content: [{ type: 'text', text }], structuredContent: { echoed: text } }),
  );
  server.registerTool(
    'slow',
    { description: 'Answers after waitMs.', inputSchema: z.object({ waitMs: z.number().int().min(0) }) },
    async ({ waitMs }) => {
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      return { content: [{ type: 'text', text: `waited ${waitMs} ms` }] };
    },
  );
  server.registerTool('explode', { description: 'Always throws.' }, () => {
    throw new Error('secret internals at /srv/upstream/handler.js:42');
  });
  server.registerResource('readme', 'upstream://readme', { mimeType: 'text/plain', description: 'The upstream readme.' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'hello from upstream' }],
  }));
  server.registerPrompt('greet', { description: 'Greets someone.', argsSchema: z.object({ who: z.string() }) }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Say hello to ${who}.` } }],
  }));
  return server;
}

/** The stub on an ephemeral loopback port, recording every request before the SDK answers it. */
export async function startUpstreamStub(clock: () => number = Date.now): Promise<UpstreamStub> {
  const extraTools: string[] = [];
  const handler = toNodeHandler(createMcpHandler(() => buildUpstreamMcpServer(extraTools), { legacy: 'stateless' }));
  const hits: UpstreamHit[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: { method?: string; params?: { name?: string; arguments?: unknown } } | undefined;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        body = undefined;
      }
      hits.push({ atMs: clock(), headers: req.headers, method: body?.method, tool: body?.method === 'tools/call' ? body.params?.name : undefined, args: body?.params?.arguments });
      void handler(req, res, body);
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    hits,
    extraTools,
    calls: () => hits.filter((hit) => hit.method === 'tools/call'),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A stateful upstream (sessions kept in memory, as most deployed servers do): `restart()` forgets every session, as a new process would. */
export interface StatefulUpstreamStub extends UpstreamStub {
  restart(): void;
  /** Sessions started so far. */
  sessions(): number;
}

export async function startStatefulUpstreamStub(): Promise<StatefulUpstreamStub> {
  let transports = new Map<string, NodeStreamableHTTPServerTransport>();
  let started = 0;
  const hits: UpstreamHit[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const body = raw === '' ? undefined : (JSON.parse(raw) as { method?: string; params?: { name?: string; arguments?: unknown } });
        hits.push({ atMs: Date.now(), headers: req.headers, method: body?.method, tool: body?.method === 'tools/call' ? body.params?.name : undefined, args: body?.params?.arguments });
        const sessionId = req.headers['mcp-session-id'];
        let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
        if (transport === undefined) {
          if (sessionId !== undefined) {
            res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
            return;
          }
          const sessions = transports;
          const fresh: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, fresh) });
          started += 1;
          await buildUpstreamMcpServer().connect(fresh);
          transport = fresh;
        }
        await transport.handleRequest(req, res, body);
      })();
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    hits,
    extraTools: [],
    calls: () => hits.filter((hit) => hit.method === 'tools/call'),
    restart: () => {
      for (const transport of transports.values()) void transport.close();
      transports = new Map();
    },
    sessions: () => started,
    close: () =>
      new Promise<void>((resolve) => {
        for (const transport of transports.values()) void transport.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
