import { createMcpHandler as createSdkMcpHandler } from '@modelcontextprotocol/server';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Config } from '../config/config';
import type { Gateway } from '../gateway/gateway';
import type { Tier } from '../config/tier';
import { decisionOf, mcpEraOf, tokenOf } from '../http/request-locals';
import type { RateLimiter } from '../limiter/rate-limiter';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken } from '../tokens/token-record';
import { buildMcpServer } from './build-mcp-server';
import { authInfoFor } from './call-context';
import { LegacyExchange } from './legacy-exchange';
import { McpServerPool } from './mcp-server-pool';
import type { ToolContext, ToolDefinition } from './tool-registry';
import { tools as defaultTools } from './tools';
import { sendWebResponse, webRequestOf } from './web-exchange';

export { SERVER_INFO } from './build-mcp-server';

export interface McpHandlerOptions {
  readonly config: Config;
  readonly limiter: RateLimiter;
  readonly logger: Logger;
  readonly clock: () => number;
  /** The tier a token is counted under; the same function the rate-limit middleware used. */
  readonly policyFor: (token: AuthenticatedToken) => Tier;
  /** Default: every tool in ./tools. */
  readonly tools?: readonly ToolDefinition[];
  /** UPSTREAM_MCP_URL set: the upstream served beside our own tools. */
  readonly gateway?: Gateway;
}

/** The MCP endpoint, and how many servers it has built (the pools' peak concurrency, not a count of requests). */
export interface McpHandler extends RequestHandler {
  readonly serversBuilt: () => number;
}

/**
 * Stateless Streamable HTTP, both protocol eras, JSON answers: any instance
 * can answer any call and nothing outlives the response.
 *
 * - 2026-07-28 (`server/discover`, a `_meta` envelope on every request): the
 *   SDK's own `createMcpHandler`, modern-only, with its full validation ladder.
 * - 2025-03-26 .. 2025-11-25 (initialize handshake): one server, built and
 *   connected at boot, answering every caller (./legacy-exchange), JSON.
 *
 * Nothing is built per request: the 2025 server once, the 2026 servers once
 * each and pooled (./mcp-server-pool; the SDK's entry needs an unconnected
 * server per exchange). Each call's token and decision reach the tools
 * through the request's AuthInfo (./call-context), never through the server.
 */
export function createMcpHandler(options: McpHandlerOptions): McpHandler {
  const tools = options.tools ?? defaultTools;
  const build = () => buildMcpServer(options.config, tools, options.logger, options.gateway);
  const modernPool = new McpServerPool(build);
  const onerror = (error: Error): void => {
    // The SDK reports requests it rejects (a bad header, an unknown revision) here; its text is its own, never the caller's secret.
    options.logger.debug('MCP transport rejected a request', { event: 'mcp.transport_error', error: error.message });
  };
  const modern = createSdkMcpHandler(() => modernPool.acquire(), { legacy: 'reject', onerror });
  // Connecting our own transport completes at once; the promise is kept so no request can overtake it.
  const legacy = LegacyExchange.connect(build(), onerror);

  const handler = async function mcpHandler(req: Request, res: Response, next: NextFunction): Promise<void> {
    const token = tokenOf(res);
    const decision = decisionOf(res);
    const era = mcpEraOf(res);
    if (token === undefined || decision === undefined || era === undefined) {
      // A wiring mistake (handler mounted without auth, limiter or protocol check): never serve a call uncounted.
      next(new Error('MCP handler reached without an authenticated token, a rate-limit decision and a protocol era'));
      return;
    }
    const context: ToolContext = { token, decision, limiter: options.limiter, tier: options.policyFor(token), clock: options.clock };
    const authInfo = authInfoFor(context);
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });

    try {
      if (era === 'modern') {
        await sendWebResponse(res, await modern.fetch(webRequestOf(req, abort.signal), { authInfo, parsedBody: req.body }));
        return;
      }
      const answer = await (await legacy).answer(req.body, authInfo, abort.signal);
      if (answer.status === 'abandoned') return;
      if (answer.status === 202) {
        res.status(202).end();
        return;
      }
      // Straight to Node, not res.json(): Express would hash every answer for an ETag no POST is revalidated with.
      res.statusCode = 200;
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.end(JSON.stringify(answer.body));
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      next(error);
    }
  };
  return Object.assign(handler, { serversBuilt: () => 1 + modernPool.built });
}
