import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { isForgottenSession } from '../../../src/gateway/forgotten-session';
import { ToolCallForwarder, type ForwardRelay } from '../../../src/gateway/tool-call-forwarder';
import { upstreamErrorOf } from '../../../src/gateway/upstream-error';

/**
 * The forwarder against a real loopback server: what it sends, and what it
 * makes of each way an upstream can answer. The deadline is real time (the
 * socket is), kept short.
 */

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: { id?: number; method?: string; params?: Record<string, unknown>; result?: unknown; error?: { code: number; message: string } };
}

type Answer = (res: ServerResponse, request: Received['body']) => void;

const DEADLINE_MS = 300;
const MAX_BYTES = 64 * 1024;
const SESSION = { sessionId: 'sess-1', protocolVersion: '2025-11-25', tokenId: 'tok_abc' };

let server: Server;
let pool: Pool;
let forwarder: ToolCallForwarder;
let answer: Answer;
let received: Received[];
let listChanged = 0;

const json = (res: ServerResponse, status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const sse = (...messages: unknown[]): string => messages.map((m) => `event: message\ndata: ${JSON.stringify(m)}\n\n`).join('');

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as Received['body'];
      received.push({ headers: req.headers, body });
      if (body.method === 'tools/call') return answer(res, body);
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  pool = new Pool(origin, { headersTimeout: 0, bodyTimeout: 0 });
  forwarder = new ToolCallForwarder({ pool, path: '/mcp', authorization: 'Bearer up_cred', tokenIdHeader: 'X-Firelimit-Token-Id', deadlineMs: DEADLINE_MS, maxAnswerBytes: MAX_BYTES, onListChanged: () => listChanged++ });
});

beforeEach(() => {
  received = [];
  listChanged = 0;
});

afterAll(async () => {
  await pool.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const call = (relay: ForwardRelay = {}, signal?: AbortSignal): Promise<unknown> => forwarder.call(SESSION, { name: 'echo', arguments: { text: 'hi' } }, signal, relay);
const failureOf = async (promise: Promise<unknown>): Promise<unknown> => promise.then(() => new Error('expected a failure'), (error: unknown) => error);
const until = async (what: () => boolean): Promise<void> => {
  for (let i = 0; i < 100 && !what(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('ToolCallForwarder: one tools/call upstream over a pooled connection', () => {
  it("sends the call on the caller's session with the configured credential and the public token id, and no progress token unasked", async () => {
    answer = (res, request) => json(res, 200, { jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: 'hi' }] } });
    await expect(call()).resolves.toEqual({ content: [{ type: 'text', text: 'hi' }] });
    const [{ headers, body }] = received as [Received];
    expect(headers).toMatchObject({ 'mcp-session-id': 'sess-1', 'mcp-protocol-version': '2025-11-25', authorization: 'Bearer up_cred', 'x-firelimit-token-id': 'tok_abc' });
    expect(body).toEqual({ jsonrpc: '2.0', id: body.id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } });
  });

  it.each([
    ['a batch holding the answer', (res: ServerResponse, id: unknown) => json(res, 200, [{ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } }, { jsonrpc: '2.0', id, result: { content: [] } }])],
    ['an SSE stream', (res: ServerResponse, id: unknown) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(sse({ jsonrpc: '2.0', id, result: { content: [] } }))],
    ['a result without content (the schema defaults it to none)', (res: ServerResponse, id: unknown) => json(res, 200, { jsonrpc: '2.0', id, result: {} })],
  ])('takes the answer from %s', async (_name, send) => {
    answer = (res, request) => send(res, request.id);
    await expect(call()).resolves.toEqual({ content: [] });
  });

  it("relays progress for its own token and the log, refuses the upstream's requests at once, answers its ping, then takes the result", async () => {
    answer = (res, request) => {
      const token = (request.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } }));
      res.write(sse({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'someone-else', progress: 9 } }));
      res.write(sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'step' } }));
      res.write(sse({ jsonrpc: '2.0', id: 'ask-1', method: 'sampling/createMessage', params: {} }, { jsonrpc: '2.0', id: 'ask-2', method: 'ping' }));
      res.write(sse({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }));
      // Split inside an event: the reader joins it.
      const last = sse({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 2, total: 2 } }, { jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: 'done' }] } });
      res.write(last.slice(0, 40));
      setTimeout(() => res.end(last.slice(40)), 10);
    };
    const progress: unknown[] = [];
    const logs: unknown[] = [];
    await expect(call({ onprogress: (p) => progress.push(p.progress), onlog: (l) => logs.push(l.data) })).resolves.toEqual({ content: [{ type: 'text', text: 'done' }] });
    expect(progress).toEqual([1, 2]);
    expect(logs).toEqual(['step']);
    expect(listChanged).toBe(1);
    await until(() => received.length >= 3);
    const answers = received.filter((r) => r.body.method === undefined).map((r) => r.body);
    expect(answers).toContainEqual({ jsonrpc: '2.0', id: 'ask-1', error: { code: -32601, message: expect.stringContaining('sampling/createMessage is not relayed') as unknown } });
    expect(answers).toContainEqual({ jsonrpc: '2.0', id: 'ask-2', result: {} });
    expect(received[0]?.body.params?._meta).toEqual({ progressToken: received[0]?.body.id });
  });

  it.each([
    ['HTTP 404', (res: ServerResponse) => void res.writeHead(404).end(), true],
    ['HTTP 400 about the session', (res: ServerResponse) => json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } }), true],
    ['HTTP 400 about something else', (res: ServerResponse) => json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'bad' } }), false],
  ])('%s is refused with its status, and a forgotten session is told apart from another refusal', async (_name, send, forgotten) => {
    answer = (res) => send(res);
    const failure = await failureOf(call());
    expect(upstreamErrorOf(failure, DEADLINE_MS).kind).toBe('refused');
    expect(isForgottenSession(failure)).toBe(forgotten);
  });

  it.each([
    ['a JSON-RPC error', (res: ServerResponse, id: unknown) => json(res, 200, { jsonrpc: '2.0', id, error: { code: -32602, message: 'Invalid params: no text' } }), 'protocol', 'Invalid params: no text'],
    ['malformed JSON', (res: ServerResponse) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":'), 'invalid', 'not a valid MCP answer'],
    ['a result that is not a tool result', (res: ServerResponse, id: unknown) => json(res, 200, { jsonrpc: '2.0', id, result: { content: 'text' } }), 'invalid', 'not a valid MCP answer'],
    ['a message that is not JSON-RPC', (res: ServerResponse) => json(res, 200, { hello: 1 }), 'invalid', 'not a valid MCP answer'],
    ['another content type', (res: ServerResponse) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>'), 'invalid', 'not a valid MCP answer'],
    ['an answer past the byte bound', (res: ServerResponse) => void res.writeHead(200, { 'content-type': 'application/json' }).end('x'.repeat(MAX_BYTES + 1)), 'invalid', `answered more than ${MAX_BYTES} bytes`],
    ['an SSE stream past the byte bound', (res: ServerResponse) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${'x'.repeat(MAX_BYTES)}\n\n`), 'invalid', `answered more than ${MAX_BYTES} bytes`],
    ['an answer to another id', (res: ServerResponse, id: unknown) => json(res, 200, { jsonrpc: '2.0', id: Number(id) + 1, result: { content: [] } }), 'timeout', `did not answer within ${DEADLINE_MS} ms`],
    ['an SSE stream that breaks', (res: ServerResponse) => (res.writeHead(200, { 'content-type': 'text/event-stream' }), res.write(': hi\n\n'), setTimeout(() => res.socket?.destroy(), 10)), 'timeout', `did not answer within ${DEADLINE_MS} ms`],
  ])('%s fails the call with the kind and words the caller gets', async (_name, send, kind, words) => {
    answer = (res, request) => void send(res, request.id);
    const failure = upstreamErrorOf(await failureOf(call()), DEADLINE_MS);
    expect(failure.kind).toBe(kind);
    expect(failure.message).toContain(words);
  });

  it('a caller who goes away ends the call at once and the upstream is told it was cancelled', async () => {
    answer = () => undefined;
    const abort = new AbortController();
    const pending = failureOf(call({}, abort.signal));
    await until(() => received.length === 1);
    abort.abort(new Error('caller gone'));
    expect(await pending).toMatchObject({ message: 'caller gone' });
    await until(() => received.length === 2);
    expect(received[1]?.body).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: received[0]?.body.id, reason: 'Error: caller gone' } });
  });
});
