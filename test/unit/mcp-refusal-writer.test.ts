import express from 'express';
import request from 'supertest';
import type { Decision } from '../../src/library/window/decision';
import { createMcpRefusalWriter } from '../../src/library/express/mcp-refusal-writer';
import type { McpEra } from '../../src/library/express/refusal-code';
import { refusalBody } from '../../src/library/express/refusal-body';

const END = 1_700_000_040_000;

function refused(reason: Decision['reason'], retryAfterMs: number): Decision {
  const top = { allowed: false, limit: 10, remaining: 0, resetAtMs: END, retryAfterMs, policyName: 'default', windowMs: 60_000, algorithm: 'fixed-window' as const };
  return { ...top, shared: reason !== 'backend_unavailable', reason, policies: [top] };
}

/** An /mcp route that refuses every call with `decision` through the writer. */
function appRefusing(decision: Decision, eraOf?: (req: express.Request) => McpEra) {
  const app = express();
  app.use(express.json());
  const refuse = createMcpRefusalWriter(eraOf === undefined ? {} : { eraOf });
  app.post('/mcp', (req, res) => refuse(req, res, decision));
  return app;
}

describe('createMcpRefusalWriter: a refusal an MCP client can show', () => {
  test.each<[string, Decision, Record<string, string>, number, number]>([
    ['rate limited, 2025 era (no version header)', refused('limit', 47_500), {}, 429, -32029],
    ['rate limited, an older 2025 revision', refused('limit', 47_500), { 'mcp-protocol-version': '2025-06-18' }, 429, -32029],
    ['rate limited, 2026-07-28 era: the HTTP status as the code', refused('limit', 47_500), { 'mcp-protocol-version': '2026-07-28' }, 429, 429],
    ['store down (fail-closed), 2025 era', refused('backend_unavailable', 5_000), {}, 503, -32053],
    ['store down (fail-closed), 2026-07-28 era', refused('backend_unavailable', 5_000), { 'mcp-protocol-version': '2026-07-28' }, 503, 503],
  ])('%s', async (_name, decision, headers, status, code) => {
    const answer = await request(appRefusing(decision)).post('/mcp').set(headers).send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } });
    expect(answer.status).toBe(status);
    expect(answer.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code } });
    // data is the plain JSON refusal; its message (which says when to retry) is the error's.
    const body = refusalBody(decision);
    expect(answer.body.error.data).toEqual(body);
    expect(answer.body.error.message).toBe(body.message);
  });

  test('a batch has no single id: answered with id null', async () => {
    const answer = await request(appRefusing(refused('limit', 1000))).post('/mcp').send([{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 2, method: 'ping' }]);
    expect(answer.body).toMatchObject({ id: null, error: { code: -32029 } });
  });

  test('a body that is not JSON-RPC is answered with id null', async () => {
    const answer = await request(appRefusing(refused('limit', 1000))).post('/mcp').send({ hello: 'world' });
    expect(answer.body).toMatchObject({ id: null });
  });

  test('eraOf decides the era, whatever the headers say', async () => {
    const answer = await request(appRefusing(refused('limit', 1000), () => 'modern')).post('/mcp').send({ jsonrpc: '2.0', id: 'a', method: 'ping' });
    expect(answer.body).toMatchObject({ id: 'a', error: { code: 429 } });
  });
});
