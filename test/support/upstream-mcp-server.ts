import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

/** One HTTP request the upstream received, and the tools/call it carried, if any. */
export interface UpstreamHit {
  readonly atMs: number;
  readonly headers: IncomingHttpHeaders;
  readonly method: string | undefined;
  readonly tool: string | undefined;
  readonly args: unknown;
  /** The request's `_meta.progressToken`: what the gateway asked progress under. */
  readonly progressToken: unknown;
  /** The JSON-RPC id: a forwarded tools/call's is from the forwarder's range (ADR 0065), the SDK client's start at 0. */
  readonly id: unknown;
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

/**
 * A real SDK 2.x server: an `echo` tool with input/output schemas and
 * annotations, a `slow` one, a `count` one that reports progress and logs
 * as it goes, an `ask` one that sends its client a request (sampling,
 * elicitation, roots), a resource and a prompt.
 */
export function buildUpstreamMcpServer(extraTools: readonly string[] = []): McpServer {
  const server = new McpServer({ name: 'stub-upstream', version: '1.0.0' }, { capabilities: { logging: {} } });
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
  server.registerTool(
    'count',
    { description: 'Counts to steps, reporting progress (when asked) and logging each step under label.', inputSchema: z.object({ steps: z.number().int().min(1), label: z.string() }) },
    async ({ steps, label }, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      for (let step = 1; step <= steps; step++) {
        if (progressToken !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: step, total: steps, message: `${label} ${step}` } });
        await ctx.mcpReq.log('info', { label, step }, 'counter');
        await new Promise((resolve) => setImmediate(resolve));
      }
      return { content: [{ type: 'text', text: `${label} counted to ${steps}` }] };
    },
  );
  server.registerTool(
    'ask',
    { description: 'Asks its client for sampling, an elicitation or its roots, and says what came back.', inputSchema: z.object({ what: z.enum(['sampling', 'elicitation', 'roots']) }) },
    async ({ what }, ctx) => {
      // Longer than a test waits: an unanswered request shows up as a slow call, not as this tool's timeout text.
      const options = { timeout: 10_000 };
      try {
        if (what === 'sampling') await ctx.mcpReq.requestSampling({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 }, options);
        else if (what === 'elicitation') await ctx.mcpReq.elicitInput({ message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } }, options);
        else await ctx.mcpReq.send({ method: 'roots/list' }, options);
        return { content: [{ type: 'text', text: `${what} answered` }] };
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        return { content: [{ type: 'text', text: `${what} refused (${String(code)}): ${(error as Error).message}` }] };
      }
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

/**
 * A request listener that reads each body, records the request as a hit
 * (before the SDK answers it), then hands the parsed body on.
 */
export function recordingRequests(hits: UpstreamHit[], clock: () => number, handle: (req: IncomingMessage, res: ServerResponse, body: unknown) => void): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: { id?: unknown; method?: string; params?: { name?: string; arguments?: unknown; _meta?: { progressToken?: unknown } } } | undefined;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        body = undefined;
      }
      hits.push({ atMs: clock(), headers: req.headers, method: body?.method, tool: body?.method === 'tools/call' ? body.params?.name : undefined, args: body?.params?.arguments, progressToken: body?.params?._meta?.progressToken, id: body?.id });
      handle(req, res, body);
    });
  };
}

/** The stub on an ephemeral loopback port, recording every request before the SDK answers it. */
export async function startUpstreamStub(clock: () => number = Date.now): Promise<UpstreamStub> {
  const extraTools: string[] = [];
  const handler = toNodeHandler(createMcpHandler(() => buildUpstreamMcpServer(extraTools), { legacy: 'stateless' }));
  const hits: UpstreamHit[] = [];
  const server: Server = createServer(recordingRequests(hits, clock, (req, res, body) => void handler(req, res, body)));
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
