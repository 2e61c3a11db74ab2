import { createMcpHandler as createSdkMcpHandler } from '@modelcontextprotocol/server';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Config } from '../config/config';
import type { Tier } from '../config/tier';
import { decisionOf, mcpEraOf, tokenOf } from '../http/request-locals';
import type { RateLimiter } from '../limiter/rate-limiter';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken } from '../tokens/token-record';
import { buildMcpServer } from './build-mcp-server';
import { authInfoFor } from './call-context';
import { LEGACY_TRANSPORT_ACCEPT, serveLegacyExchange } from './legacy-exchange';
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
 * - 2025-03-26 .. 2025-11-25 (initialize handshake): the SDK's stateless
 *   transport per request, answering JSON.
 *
 * Servers are built once and pooled per era (./mcp-server-pool); each call's
 * token and decision reach the tools through the request's AuthInfo
 * (./call-context), never through the server.
 */
export function createMcpHandler(options: McpHandlerOptions): McpHandler {
  const tools = options.tools ?? defaultTools;
  const build = () => buildMcpServer(options.config, tools, options.logger);
  const legacyPool = new McpServerPool(build);
  const modernPool = new McpServerPool(build);
  const onerror = (error: Error): void => {
    // The SDK reports requests it rejects (a bad header, an unknown revision) here; its text is its own, never the caller's secret.
    options.logger.debug('MCP transport rejected a request', { event: 'mcp.transport_error', error: error.message });
  };
  const modern = createSdkMcpHandler(() => modernPool.acquire(), { legacy: 'reject', onerror });

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
      const response =
        era === 'modern'
          ? await modern.fetch(webRequestOf(req, abort.signal), { authInfo, parsedBody: req.body })
          : await serveLegacyExchange(legacyPool.acquire(), webRequestOf(req, abort.signal, LEGACY_TRANSPORT_ACCEPT), req.body, authInfo, onerror);
      await sendWebResponse(res, response);
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      next(error);
    }
  };
  return Object.assign(handler, { serversBuilt: () => legacyPool.built + modernPool.built });
}
