import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * The least an MCP server over Streamable HTTP can be (node:http, one
 * JSON.parse, a fixed answer): the upstream `npm run bench -- gateway` puts
 * behind firelimit and behind the peer, so what is timed is the forwarding,
 * not the upstream. It keeps sessions (an id from initialize, 404 for one it
 * does not know), as the SDK's servers and the peer expect, answers every
 * request as plain JSON, and has one tool, `echo`.
 */

const ECHO_TOOL = {
  name: 'echo',
  description: 'Answers with its message',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
};

interface RpcRequest {
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: { readonly protocolVersion?: string; readonly arguments?: { readonly message?: unknown } };
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers }).end(text);
}

function resultOf(request: RpcRequest): unknown {
  switch (request.method) {
    case 'tools/list':
      return { tools: [ECHO_TOOL] };
    case 'tools/call':
      return { content: [{ type: 'text', text: `Echo: ${String(request.params?.arguments?.message)}` }] };
    case 'ping':
      return {};
    default:
      return undefined;
  }
}

function handle(sessions: Set<string>, req: IncomingMessage, res: ServerResponse, raw: string): void {
  const sessionId = req.headers['mcp-session-id'];
  if (req.method === 'DELETE') {
    sessions.delete(String(sessionId));
    return void res.writeHead(200).end();
  }
  // No standalone stream: nothing is ever sent outside a request.
  if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
  let request: RpcRequest;
  try {
    request = JSON.parse(raw) as RpcRequest;
  } catch {
    return answer(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
  }
  if (request.method === 'initialize') {
    const id = randomUUID();
    sessions.add(id);
    const result = { protocolVersion: request.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'minimal-upstream', version: '1.0.0' } };
    return answer(res, 200, { jsonrpc: '2.0', id: request.id, result }, { 'mcp-session-id': id });
  }
  if (typeof sessionId !== 'string' || !sessions.has(sessionId)) return answer(res, 404, { jsonrpc: '2.0', id: request.id ?? null, error: { code: -32001, message: 'Session not found' } });
  if (request.id === undefined) return void res.writeHead(202).end();
  const result = resultOf(request);
  if (result === undefined) return answer(res, 200, { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: `Method not found: ${String(request.method)}` } });
  answer(res, 200, { jsonrpc: '2.0', id: request.id, result });
}

export function createMinimalMcpUpstream(): Server {
  const sessions = new Set<string>();
  return createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => handle(sessions, req, res, raw));
  });
}
