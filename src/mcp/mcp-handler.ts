import { createMcpHandler as createSdkMcpHandler } from '@modelcontextprotocol/server';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Config } from '../config/config';
import type { ScopeBudget } from '../http/caller-budgets';
import type { Gateway } from '../gateway/gateway';
import type { Tier } from '../config/tier';
import { decisionOf, mcpEraOf, tokenOf, waitBudgetOf } from '../http/request-locals';
import type { RateLimiter } from '../library';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken } from '../tokens/token-record';
import { buildMcpServer } from './build-mcp-server';
import { CallerGone } from './caller-signal';
import { authInfoFor } from './call-context';
import { LegacyExchange } from './legacy-exchange';
import { isPlainModernRequest, MODERN_REVISION, ModernExchange } from './modern-exchange';
import { McpServerPool } from './mcp-server-pool';
import { DEFAULT_RELAY_BOUNDS, progressIfStreamed, RelatedStream } from './related-stream';
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
  /** The caller's budgets per scope, for rate_limit_status; default none. */
  readonly budgetsOf?: (res: Response) => Promise<readonly ScopeBudget[]>;
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
 * - 2026-07-28 (`server/discover`, a `_meta` envelope on every request): a
 *   plain request (./modern-exchange) on one server built and connected at
 *   boot; anything else, and anything the SDK's ladder refuses there, through
 *   the SDK's own `createMcpHandler`, modern-only, on pooled servers.
 * - 2025-03-26 .. 2025-11-25 (initialize handshake): one server, built and
 *   connected at boot, answering every caller (./legacy-exchange), JSON.
 *
 * Nothing is built per request: the two shared servers once, the entry's
 * servers once each and pooled (./mcp-server-pool; the SDK's entry needs an
 * unconnected server per exchange). Each call's token and decision reach the tools
 * through the request's AuthInfo (./call-context), never through the server.
 */
export function createMcpHandler(options: McpHandlerOptions): McpHandler {
  const tools = options.tools ?? defaultTools;
  const gateway = options.gateway === undefined ? {} : { gateway: options.gateway };
  const build = () => buildMcpServer(options.config, tools, options.logger, gateway);
  const modernPool = new McpServerPool(build);
  const onerror = (error: Error): void => {
    // The SDK reports requests it rejects (a bad header, an unknown revision) here; its text is its own, never the caller's secret.
    options.logger.debug('MCP transport rejected a request', { event: 'mcp.transport_error', error: error.message });
  };
  const modern = createSdkMcpHandler(() => modernPool.acquire(), { legacy: 'reject', onerror });
  // Connecting our own transports completes at once; the promises are kept so no request can overtake them.
  const legacy = LegacyExchange.connect(build(), onerror);
  const shared = ModernExchange.connect(buildMcpServer(options.config, tools, options.logger, { modernRevision: MODERN_REVISION, ...gateway }), onerror);

  const handler = async function mcpHandler(req: Request, res: Response, next: NextFunction): Promise<void> {
    const token = tokenOf(res);
    const decision = decisionOf(res);
    const era = mcpEraOf(res);
    if (token === undefined || decision === undefined || era === undefined) {
      // A wiring mistake (handler mounted without auth, limiter or protocol check): never serve a call uncounted.
      next(new Error('MCP handler reached without an authenticated token, a rate-limit decision and a protocol era'));
      return;
    }
    const { budgetsOf } = options;
    const context: ToolContext = {
      token,
      decision,
      limiter: options.limiter,
      tier: options.policyFor(token),
      clock: options.clock,
      ...(budgetsOf !== undefined ? { budgets: budgetsOf.bind(undefined, res) } : {}),
      waitBudget: waitBudgetOf(res),
    };
    const authInfo = authInfoFor(context);
    const body = progressIfStreamed(req.body, req.headers.accept);
    const gone = new CallerGone();
    // Bound, not a named closure: under tsx every named closure built per request also costs a defineProperty.
    const relayCut = warnRelayCut.bind(undefined, options.logger, token.id);
    (res as CalledResponse)[CALLER_GONE] = gone;
    res.on('close', abortIfCut);

    try {
      if (era === 'modern') {
        if (isPlainModernRequest(req.headers, body)) {
          const answer = await (await shared).answer(body, authInfo, gone);
          if (answer.status === 'abandoned') return;
          if (answer.status === 200) {
            sendJson(res, answer.body);
            return;
          }
        }
        await sendWebResponse(res, await modern.fetch(webRequestOf(req, gone.asAbortSignal()), { authInfo, parsedBody: body }), relayCut);
        return;
      }
      const stream = RelatedStream.for(res, body, DEFAULT_RELAY_BOUNDS, relayCut);
      const answer = await (await legacy).answer(body, authInfo, gone, stream?.sink);
      if (answer.status === 'abandoned') return;
      if (answer.status === 202) {
        res.status(202).end();
        return;
      }
      if (stream !== undefined && !Array.isArray(answer.body) && stream.finish(answer.body)) return;
      sendJson(res, answer.body);
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      next(error);
    }
  };
  return Object.assign(handler, { serversBuilt: () => 2 + modernPool.built });
}

const CALLER_GONE = Symbol('callerGone');
type CalledResponse = Response & { [CALLER_GONE]?: CallerGone };

/** One listener for every response, not a closure per request: a response closed before it finished means the caller went away. */
function abortIfCut(this: CalledResponse): void {
  if (!this.writableFinished) this[CALLER_GONE]?.abort();
}

function warnRelayCut(logger: Logger, tokenId: string, why: string): void {
  logger.warn('relayed stream cut: its caller does not read it', { event: 'mcp.relay_cut', why, tokenId });
}

/** Straight to Node, not res.json(): Express would hash every answer for an ETag no POST is revalidated with. */
function sendJson(res: Response, body: unknown): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}
