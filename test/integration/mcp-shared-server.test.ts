import { McpServer, type AuthInfo } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { LegacyExchange } from '../../src/mcp/legacy-exchange';

/**
 * The 2025-era server is one instance for every caller, on the real SDK
 * protocol layer. What one caller sends must never reach another's request:
 * ids are the exchange's own inside, and client notifications (a
 * `notifications/cancelled` naming an id) stop at the door.
 */
const authA: AuthInfo = { token: 'tok_a', clientId: 'tok_a', scopes: ['mcp'] };
const authB: AuthInfo = { token: 'tok_b', clientId: 'tok_b', scopes: ['mcp'] };

/** A server whose `slow` tool answers with its caller's token id once `release` is called. */
function slowServer(): { server: McpServer; release: () => void; started: Promise<void> } {
  let release!: () => void;
  let markStarted!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const server = new McpServer({ name: 't', version: '1' });
  server.registerTool('slow', { inputSchema: z.object({}), outputSchema: z.object({ caller: z.string() }) }, async (_args, ctx) => {
    markStarted();
    await gate;
    const caller = ctx.http?.authInfo?.clientId ?? 'nobody';
    return { content: [{ type: 'text', text: caller }], structuredContent: { caller } };
  });
  return { server, release, started };
}

const call = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow', arguments: {} } });

test("one caller's notifications/cancelled cannot cancel another caller's request, whatever id it names", async () => {
  const { server, release, started } = slowServer();
  const exchange = await LegacyExchange.connect(server, () => undefined);
  try {
    const pendingA = exchange.answer(call(1), authA, new AbortController().signal);
    await started;
    // B names every id A's request could be running under, inside the exchange or on the wire.
    for (const requestId of [0, 1, 2, 3]) {
      const ack = await exchange.answer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } }, authB, new AbortController().signal);
      expect(ack).toEqual({ status: 202 });
    }
    release();
    expect(await pendingA).toEqual({ status: 200, body: { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'tok_a' }], structuredContent: { caller: 'tok_a' } } } });
  } finally {
    await exchange.close();
  }
});

test('two callers with the same JSON-RPC id, in flight at once, each get their own answer under their own id', async () => {
  const { server, release, started } = slowServer();
  const exchange = await LegacyExchange.connect(server, () => undefined);
  try {
    const pendingA = exchange.answer(call(7), authA, new AbortController().signal);
    const pendingB = exchange.answer([call(7), call('x')], authB, new AbortController().signal);
    await started;
    release();
    const [a, b] = await Promise.all([pendingA, pendingB]);
    expect(a).toMatchObject({ status: 200, body: { id: 7, result: { structuredContent: { caller: 'tok_a' } } } });
    expect(b).toMatchObject({
      status: 200,
      body: [
        { id: 7, result: { structuredContent: { caller: 'tok_b' } } },
        { id: 'x', result: { structuredContent: { caller: 'tok_b' } } },
      ],
    });
  } finally {
    await exchange.close();
  }
});

test('a caller that goes away is not waited for, and the next caller is answered', async () => {
  const { server, release, started } = slowServer();
  const exchange = await LegacyExchange.connect(server, () => undefined);
  try {
    const gone = new AbortController();
    const pendingGone = exchange.answer(call(1), authA, gone.signal);
    await started;
    gone.abort();
    expect(await pendingGone).toEqual({ status: 'abandoned' });
    release();
    expect(await exchange.answer(call(2), authB, new AbortController().signal)).toMatchObject({ status: 200, body: { id: 2 } });
  } finally {
    await exchange.close();
  }
});

test('requests reach the SDK protocol layer past its zod type dispatch, and are answered with the caller they came with', async () => {
  const { server, release } = slowServer();
  const exchange = await LegacyExchange.connect(server, () => undefined);
  try {
    // An SDK upgrade that renames the request entry keeps working through onmessage; this says the fast path is gone.
    expect(exchange.skipsTypeDispatch).toBe(true);
    release();
    const answer = await exchange.answer(call('x'), authA, new AbortController().signal);
    expect(answer).toEqual({ status: 200, body: { jsonrpc: '2.0', id: 'x', result: expect.objectContaining({ structuredContent: { caller: 'tok_a' } }) } });
  } finally {
    await exchange.close();
  }
});
