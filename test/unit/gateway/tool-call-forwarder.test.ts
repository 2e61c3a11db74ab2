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
    ['a JSON answer that breaks midway', (res: ServerResponse) => (res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' }), res.write('{"jsonrpc":'), setTimeout(() => res.socket?.destroy(), 10)), 'unreachable', ''],
    ['HTTP 202 (no answer on this stream)', (res: ServerResponse) => void res.writeHead(202).end(), 'timeout', `did not answer within ${DEADLINE_MS} ms`],
  ])('%s fails the call with the kind and words the caller gets', async (_name, send, kind, words) => {
    answer = (res, request) => void send(res, request.id);
    const failure = upstreamErrorOf(await failureOf(call()), DEADLINE_MS);
    expect(failure.kind).toBe(kind);
    expect(failure.message).toContain(words);
  });

  it('a refusal with a long body is read only as far as its start, and the pool serves the next call', async () => {
    answer = (res) => void res.writeHead(503, { 'content-type': 'text/plain' }).end('busy '.repeat(200_000));
    const failure = await failureOf(call());
    expect(upstreamErrorOf(failure, DEADLINE_MS).kind).toBe('refused');
    const text = (failure as { data?: { text?: string } }).data?.text ?? '';
    expect(text.length).toBeGreaterThanOrEqual(4096);
    expect(text.length).toBeLessThan(1_000_000);
    answer = (res, request) => json(res, 200, { jsonrpc: '2.0', id: request.id, result: { content: [] } });
    await expect(call()).resolves.toEqual({ content: [] });
  });

  it('an informational 103 before the answer is passed over', async () => {
    answer = (res, request) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      json(res, 200, { jsonrpc: '2.0', id: request.id, result: { content: [] } });
    };
    await expect(call()).resolves.toEqual({ content: [] });
  });

  it('takes the answer of an SSE stream before the stream ends, then reads the rest without failing the call', async () => {
    let ended = false;
    answer = (res, request) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse({ jsonrpc: '2.0', id: request.id, result: { content: [] } }));
      setTimeout(() => {
        res.end(sse({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }));
        ended = true;
      }, 50);
    };
    await expect(call()).resolves.toEqual({ content: [] });
    expect(ended).toBe(false);
    await until(() => ended);
    answer = (res, request) => json(res, 200, { jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: 'next' }] } });
    await expect(call()).resolves.toEqual({ content: [{ type: 'text', text: 'next' }] });
  });

  it('cuts a stream still open at the deadline after its answer: its socket is closed', async () => {
    let closed = false;
    answer = (res, request) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse({ jsonrpc: '2.0', id: request.id, result: { content: [] } }));
      res.on('close', () => (closed = true));
    };
    await expect(call()).resolves.toEqual({ content: [] });
    expect(closed).toBe(false);
    await until(() => closed);
    expect(closed).toBe(true);
  });

  it('an upstream that cannot be reached fails the call as unreachable', async () => {
    const closedServer = createServer();
    await new Promise<void>((resolve) => closedServer.listen(0, '127.0.0.1', resolve));
    const { port } = closedServer.address() as AddressInfo;
    await new Promise<void>((resolve) => closedServer.close(() => resolve()));
    const nowhere = new Pool(`http://127.0.0.1:${port}`);
    try {
      const lonely = new ToolCallForwarder({ pool: nowhere, path: '/mcp', authorization: undefined, tokenIdHeader: 'X-Firelimit-Token-Id', deadlineMs: DEADLINE_MS, maxAnswerBytes: MAX_BYTES });
      const failure = await failureOf(lonely.call(SESSION, { name: 'echo' }, undefined, {}));
      expect(upstreamErrorOf(failure, DEADLINE_MS).kind).toBe('unreachable');
    } finally {
      await nowhere.destroy();
    }
  });

  it('a caller already gone is refused at once and the call is not run upstream', async () => {
    answer = (res, request) => json(res, 200, { jsonrpc: '2.0', id: request.id, result: { content: [] } });
    const failure = await failureOf(call({}, AbortSignal.abort(new Error('left before'))));
    expect(failure).toMatchObject({ message: 'left before' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received.filter((r) => r.body.method === 'tools/call')).toHaveLength(0);
  });

  it('a call given up while queued behind another on a busy pool is never sent', async () => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const single = new Pool(origin, { connections: 1, headersTimeout: 0, bodyTimeout: 0 });
    try {
      const queued = new ToolCallForwarder({ pool: single, path: '/mcp', authorization: undefined, tokenIdHeader: 'X-Firelimit-Token-Id', deadlineMs: DEADLINE_MS, maxAnswerBytes: MAX_BYTES });
      answer = (res, request) => setTimeout(() => json(res, 200, { jsonrpc: '2.0', id: request.id, result: { content: [] } }), 100);
      const first = queued.call(SESSION, { name: 'echo' }, undefined, {});
      const abort = new AbortController();
      const second = failureOf(queued.call(SESSION, { name: 'echo' }, abort.signal, {}));
      await until(() => received.length === 1);
      abort.abort(new Error('gave up in the queue'));
      expect(await second).toMatchObject({ message: 'gave up in the queue' });
      await expect(first).resolves.toEqual({ content: [] });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(received.filter((r) => r.body.method === 'tools/call')).toHaveLength(1);
    } finally {
      await single.destroy();
    }
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
