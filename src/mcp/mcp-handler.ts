import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Config } from '../config/config';
import type { ScopeBudget } from '../http/caller-budgets';
import { tokenOf } from '../http/request-locals';
import { decisionOf } from '../http/request-locals';
import type { Tier } from '../config/tier';
import type { RateLimiter } from '../limiter/rate-limiter';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken } from '../tokens/token-record';
import { registerLimitsResource } from './resources/limits-resource';
import { registerTools, type ToolContext, type ToolDefinition } from './tool-registry';
import { tools as defaultTools } from './tools';

export const SERVER_INFO = { name: 'firelimit', version: '0.1.0' } as const;

const INSTRUCTIONS =
  'firelimit enforces a per-token rate limit shared by every instance. Call rate_limit_status to see your limit, ' +
  'what is left and when it resets; on HTTP 429 wait Retry-After seconds before trying again.';

export interface McpHandlerOptions {
  readonly config: Config;
  readonly limiter: RateLimiter;
  readonly logger: Logger;
  readonly clock: () => number;
  /** The tier a token is counted under; the same function the rate-limit middleware used. */
  readonly policyFor: (token: AuthenticatedToken) => Tier;
  /** Default: every tool in ./tools. */
  readonly tools?: readonly ToolDefinition[];
  /** The caller's budgets per scope, for rate_limit_status; default none. */
  readonly budgetsOf?: (res: Response) => Promise<readonly ScopeBudget[]>;
}

/**
 * Stateless Streamable HTTP: every POST gets a fresh McpServer and transport
 * (no session id, JSON responses instead of SSE), so any instance can answer
 * any call and nothing outlives the response. Building the server per request
 * is also what binds tools to this request's token and decision.
 */
export function createMcpHandler(options: McpHandlerOptions): RequestHandler {
  const tools = options.tools ?? defaultTools;
  return async function mcpHandler(req: Request, res: Response, next: NextFunction): Promise<void> {
    const token = tokenOf(res);
    const decision = decisionOf(res);
    if (token === undefined || decision === undefined) {
      // A wiring mistake (handler mounted without auth or limiter): never serve a call uncounted.
      next(new Error('MCP handler reached without an authenticated token and a rate-limit decision'));
      return;
    }
    const { budgetsOf } = options;
    const context: ToolContext = {
      token,
      decision,
      limiter: options.limiter,
      tier: options.policyFor(token),
      clock: options.clock,
      ...(budgetsOf !== undefined ? { budgets: () => budgetsOf(res) } : {}),
    };

    const server = new McpServer(SERVER_INFO, { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS });
    registerTools(server, tools, context, options.logger);
    registerLimitsResource(server, options.config);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    transport.onerror = (error) => {
      // The SDK reports requests it rejects (406, 415, ...) here; their text is its own, never the caller's secret.
      options.logger.debug('MCP transport rejected a request', { event: 'mcp.transport_error', tokenId: token.id, error: error.message });
    };
    res.on('close', () => {
      void transport.close().catch(() => undefined);
      void server.close().catch(() => undefined);
    });

    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      next(error);
    }
  };
}
