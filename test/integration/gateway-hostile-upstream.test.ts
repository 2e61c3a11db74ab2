import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { connect, eventually, startFirelimit, textOf, type RunningFirelimit } from '../support/gateway-harness';
import { answerJson, sseEvent, startHostileUpstream, type HostileUpstream, type RpcBody } from '../support/hostile-upstream';

/**
 * firelimit in front of an upstream that misbehaves on purpose: each of its
 * tools answers a call the way a broken or hostile server would. Whatever it
 * does, the caller gets a clear tool error within UPSTREAM_TIMEOUT_MS, the
 * upstream's internals reach neither the caller nor a log, and the sockets
 * it opened are closed.
 */

const TIMEOUT_MS = 600;
const LONG_TIMEOUT_MS = 3000;
const CREDENTIAL = 'Bearer up_cred_hostile_4d2a';
const UPSTREAM_SECRET = 'DB_PASSWORD=hunter2-9f8e';
const STACK = `Error: connect ECONNREFUSED\n    at /srv/upstream/db.js:12:7 (${UPSTREAM_SECRET})\n    at processTicksAndRejections (node:internal/process/task_queues:95:5)`;
const FIFTY_MB = 50 * 1024 * 1024;

/** Room for a loaded machine (two cores shared with other suites); a hang would not end at all. */
const SLACK_MS = 1000;

/** What the misbehaving answers did, for the test to read. */
const seen = { huge: { bytesWritten: 0, finished: false }, hugeSse: { bytesWritten: 0, finished: false }, endlessClosedAtMs: 0, hungClosedAtMs: 0 };

function onClose(res: ServerResponse, record: () => void): void {
  res.once('close', record);
}

/** Writes a 50 MB JSON-RPC result (as JSON, or as one SSE event), honouring backpressure, until done or the client hangs up. */
function huge(contentType: 'application/json' | 'text/event-stream'): (req: IncomingMessage, res: ServerResponse, body: RpcBody) => void {
  return (_req, res, body) => {
    const record = contentType === 'application/json' ? seen.huge : seen.hugeSse;
    res.writeHead(200, { 'Content-Type': contentType });
    const head = `{"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":{"content":[{"type":"text","text":"`;
    const chunk = 'A'.repeat(1024 * 1024);
    const pump = (): void => {
      while (record.bytesWritten < FIFTY_MB && !res.destroyed) {
        record.bytesWritten += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) {
        record.finished = true;
        res.end(contentType === 'application/json' ? '"}]}}' : '"}]}}\n\n');
      }
    };
    res.write(contentType === 'application/json' ? head : `event: message\ndata: ${head}`);
    pump();
  };
}

const misbehaviours = {
  huge: huge('application/json'),
  huge_sse: huge('text/event-stream'),
  endless: (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    const timer = setInterval(() => res.write(': still here\n\n'), 20);
    onClose(res, () => {
      clearInterval(timer);
      seen.endlessClosedAtMs = Date.now();
    });
  },
  hung: (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders();
    onClose(res, () => void (seen.hungClosedAtMs = Date.now()));
  },
  garbage: (_req: IncomingMessage, res: ServerResponse) => void res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"jsonrpc":"2.0","id":'),
  wrong_id: (_req: IncomingMessage, res: ServerResponse, body: RpcBody) => answerJson(res, Number(body.id) + 1000, { content: [{ type: 'text', text: 'for someone else' }] }),
  truncated: (_req: IncomingMessage, res: ServerResponse, body: RpcBody) => {
    const whole = JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [{ type: 'text', text: 'never whole' }] } });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(whole.length) });
    res.write(whole.slice(0, 20));
    setTimeout(() => res.socket?.destroy(), 20);
  },
  busy_429: (_req: IncomingMessage, res: ServerResponse) => void res.writeHead(429, { 'Retry-After': '5', 'Content-Type': 'text/plain' }).end('slow down'),
  stack_500: (_req: IncomingMessage, res: ServerResponse) => void res.writeHead(500, { 'Content-Type': 'text/plain', 'X-Debug': UPSTREAM_SECRET }).end(STACK),
  internal_error: (_req: IncomingMessage, res: ServerResponse, body: RpcBody) =>
    void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: -32603, message: `internal: ${UPSTREAM_SECRET}`, data: { stack: STACK } } })),
  // An upstream that echoes the request's Authorization, with a stack, in an error about the caller's params (issue 17 item 9).
  echoes_credential: (req: IncomingMessage, res: ServerResponse, body: RpcBody) =>
    void res.writeHead(200, { 'Content-Type': 'application/json' }).end(
      JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: -32602, message: `Invalid params: key ${String(req.headers.authorization)} lacks scope\n    at check (/srv/upstream/auth.js:9:3)` } }),
    ),
  cut: (_req: IncomingMessage, res: ServerResponse, body: RpcBody) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.write(sseEvent({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `half way ${String(body.id)}` } }));
    setTimeout(() => res.socket?.destroy(), 20);
  },
};

/** One call of `name`, timed, as the integrator sees it. */
async function timedCall(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ result: CallToolResult; tookMs: number }> {
  const startedAtMs = Date.now();
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { result, tookMs: Date.now() - startedAtMs };
}

/** firelimit with UPSTREAM_TIMEOUT_MS = `timeoutMs` in front of `upstream`, its tool list fetched once, so each test times its call alone. */
async function gatewayWith(upstream: HostileUpstream, timeoutMs: number): Promise<{ firelimit: RunningFirelimit; client: Client }> {
  const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_MCP_AUTHORIZATION: CREDENTIAL, UPSTREAM_TIMEOUT_MS: String(timeoutMs) });
  const client = await connect(firelimit.url);
  await client.listTools();
  return { firelimit, client };
}

describe('firelimit in front of an upstream that misbehaves', () => {
  let upstream: HostileUpstream;
  let firelimit: RunningFirelimit;
  let client: Client;

  beforeAll(async () => {
    upstream = await startHostileUpstream(misbehaviours);
    ({ firelimit, client } = await gatewayWith(upstream, TIMEOUT_MS));
  });

  afterAll(async () => {
    await client.close();
    await firelimit.stop();
    await upstream.close();
  });

  const call = (name: string, args?: Record<string, unknown>): ReturnType<typeof timedCall> => timedCall(client, name, args);

  it('a 50 MB SSE event is cut off too; the call ends by UPSTREAM_TIMEOUT_MS (the SDK does not fail a call whose stream broke)', async () => {
    const { result, tookMs } = await call('huge_sse');
    expect(result.isError).toBe(true);
    expect(tookMs).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(seen.hugeSse.finished).toBe(false);
    expect(seen.hugeSse.bytesWritten).toBeLessThan(FIFTY_MB);
  });

  it('an endless SSE stream ends at UPSTREAM_TIMEOUT_MS with a timeout tool error, and its socket is closed', async () => {
    const { result, tookMs } = await call('endless');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(`did not answer within ${TIMEOUT_MS} ms`);
    expect(tookMs).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    await eventually('the endless stream is closed by firelimit', () => seen.endlessClosedAtMs > 0, 2000);
  });

  it('headers then silence ends at UPSTREAM_TIMEOUT_MS, and the hung response socket is closed', async () => {
    const { result, tookMs } = await call('hung');
    expect(textOf(result)).toContain(`did not answer within ${TIMEOUT_MS} ms`);
    expect(tookMs).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    await eventually('the hung response is closed by firelimit', () => seen.hungClosedAtMs > 0, 2000);
  });

  it('malformed JSON is a tool error that says the answer was not MCP, fast', async () => {
    const { result, tookMs } = await call('garbage');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('not a valid MCP answer');
    expect(tookMs).toBeLessThan(TIMEOUT_MS);
  });

  it('a response with the wrong JSON-RPC id is never taken as the answer; the call times out', async () => {
    const { result } = await call('wrong_id');
    expect(result.isError).toBe(true);
    expect(textOf(result)).not.toContain('for someone else');
    expect(textOf(result)).toContain(`did not answer within ${TIMEOUT_MS} ms`);
  });

  it('HTTP 500 with a stack trace and a secret: a tool error naming the status, without the body or its headers, in the answer or a log', async () => {
    const { result } = await call('stack_500');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('answered HTTP 500');
    expect(JSON.stringify(result)).not.toContain('hunter2');
    expect(JSON.stringify(result)).not.toContain('/srv/upstream');
    expect(JSON.stringify(firelimit.logger.entries)).not.toContain('hunter2');
  });

  it("a JSON-RPC internal error with a secret and a stack: a JSON-RPC error with the upstream's code in our words only", async () => {
    const failure = (await client.callTool({ name: 'internal_error', arguments: {} }).catch((error: unknown) => error)) as { code?: number; message: string; data?: unknown };
    expect(failure.code).toBe(-32603);
    expect(failure.message).toContain('the upstream MCP server answered with error -32603');
    expect(JSON.stringify({ message: failure.message, data: failure.data })).not.toContain('hunter2');
    expect(failure.data).toBeUndefined();
    expect(JSON.stringify(firelimit.logger.entries)).not.toContain('hunter2');
  });

  it("an error about the caller's params that echoes firelimit's upstream credential and a stack: the code and the words, scrubbed", async () => {
    const failure = (await client.callTool({ name: 'echoes_credential', arguments: {} }).catch((error: unknown) => error)) as { code?: number; message: string };
    expect(failure.code).toBe(-32602);
    expect(failure.message).toContain('Invalid params: key [redacted] lacks scope');
    expect(failure.message).not.toContain('up_cred_hostile_4d2a');
    expect(failure.message).not.toContain('/srv/upstream');
  });

  it('a connection closed mid-stream is a tool error by UPSTREAM_TIMEOUT_MS, not a hang (the SDK does not fail the call when its stream breaks)', async () => {
    const { result, tookMs } = await call('cut');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(`did not answer within ${TIMEOUT_MS} ms`);
    expect(tookMs).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it('after all that, calls still work and no upstream credential is in any log', async () => {
    const { result } = await call('echo', { text: 'still fine' });
    expect(result.structuredContent).toEqual({ echoed: 'still fine' });
    expect(JSON.stringify(firelimit.logger.entries)).not.toContain('up_cred_hostile_4d2a');
  });
});

/**
 * Tests that race a deadline against work of known length get a deadline
 * long enough for a loaded machine to keep their order.
 */
describe('firelimit in front of an upstream that misbehaves, with a longer UPSTREAM_TIMEOUT_MS', () => {
  let upstream: HostileUpstream;
  let firelimit: RunningFirelimit;
  let client: Client;

  beforeAll(async () => {
    upstream = await startHostileUpstream(misbehaviours);
    ({ firelimit, client } = await gatewayWith(upstream, LONG_TIMEOUT_MS));
  });

  afterAll(async () => {
    await client.close();
    await firelimit.stop();
    await upstream.close();
  });

  const call = (name: string, args?: Record<string, unknown>): ReturnType<typeof timedCall> => timedCall(client, name, args);

  it('a 50 MB answer is cut off: the caller gets a tool error saying it was too large, and the upstream is not read to the end', async () => {
    const { result, tookMs } = await call('huge');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/answered more than \d+ bytes/);
    expect(tookMs).toBeLessThan(LONG_TIMEOUT_MS);
    expect(seen.huge.finished).toBe(false);
    expect(seen.huge.bytesWritten).toBeLessThan(FIFTY_MB);
  });

  it.each(['stack_500', 'busy_429', 'truncated'])("one caller's %s does not cut another caller's call in flight on the shared connection, and the next call works", async (name) => {
    const slow = call('slow', { waitMs: 1000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { result: refused } = await call(name);
    expect(refused.isError).toBe(true);
    const { result } = await slow;
    expect(result.isError).not.toBe(true);
    expect(textOf(result)).toBe('waited 1000 ms');
    expect((await call('echo', { text: `after ${name}` })).result.structuredContent).toEqual({ echoed: `after ${name}` });
  });

  it("one caller's upstream timeout does not cut another caller's call in flight on the shared connection", async () => {
    const hung = call('hung');
    // Started later, it ends after the hung call's deadline: it must still get its answer.
    await new Promise((resolve) => setTimeout(resolve, LONG_TIMEOUT_MS / 2));
    const slow = call('slow', { waitMs: LONG_TIMEOUT_MS * 0.8 });
    expect(textOf((await hung).result)).toContain('did not answer');
    const { result } = await slow;
    expect(result.isError).not.toBe(true);
    expect(textOf(result)).toBe(`waited ${LONG_TIMEOUT_MS * 0.8} ms`);
  });
});

describe('an upstream that redirects to another host', () => {
  it('is not followed: the other host never sees the credential or the call, and the caller is told clearly', async () => {
    const elsewhere: { headers: IncomingMessage['headers']; url: string | undefined }[] = [];
    const other: Server = createServer((req, res) => {
      elsewhere.push({ headers: req.headers, url: req.url });
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
    other.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => other.once('listening', resolve));
    // localhost, not 127.0.0.1: another origin, as another host would be.
    const target = `http://localhost:${(other.address() as AddressInfo).port}/steal`;
    const upstream = await startHostileUpstream({
      moved: (_req, res) => void res.writeHead(307, { Location: target }).end(),
    });
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: upstream.url, UPSTREAM_MCP_AUTHORIZATION: CREDENTIAL, UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS) });
    const client = await connect(firelimit.url);
    try {
      const result = (await client.callTool({ name: 'moved', arguments: { secret_arg: 'x' } })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain('HTTP 307');
      expect(textOf(result)).not.toContain(target);
      expect(elsewhere).toEqual([]);
    } finally {
      await client.close();
      await firelimit.stop();
      await upstream.close();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });
});
