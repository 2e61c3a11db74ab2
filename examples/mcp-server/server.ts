// An SDK 2.x Express MCP server, limited per caller with firelimit/express, shared across
// instances on Redis (memory when REDIS_URL is unset). The caller is whatever your auth says;
// here the `x-caller` header stands in for it. A refusal is a JSON-RPC error with 429 and Retry-After.
import type { AddressInfo } from 'node:net';
import type { Request, Response } from 'express';
import { createMcpExpressApp } from '@modelcontextprotocol/express';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { createMemoryStore, createRateLimiter, createRedisStore } from 'firelimit';
import { createMcpRefusalWriter, createRateLimitMiddleware } from 'firelimit/express';

function mcpServer(): McpServer {
  const server = new McpServer({ name: 'example', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes its text.', inputSchema: z.object({ text: z.string() }) }, ({ text }) => ({ content: [{ type: 'text', text }] }));
  return server;
}

const store = process.env.REDIS_URL ? await createRedisStore({ url: process.env.REDIS_URL }) : createMemoryStore();
const limiter = await createRateLimiter({ store, policy: { name: 'per-caller', algorithm: 'sliding-log', limit: Number(process.env.LIMIT ?? 120), windowMs: 60_000 } });
const mcp = toNodeHandler(createMcpHandler(() => mcpServer()));

const app = createMcpExpressApp({ host: '127.0.0.1' });
app.post(
  '/mcp',
  createRateLimitMiddleware({ limiter, key: (req: Request) => req.get('x-caller') ?? req.ip ?? 'unknown', refuse: createMcpRefusalWriter() }),
  (req: Request, res: Response) => mcp(req, res, req.body),
);
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => console.log(`listening on ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => server.close(() => void limiter.close()));
