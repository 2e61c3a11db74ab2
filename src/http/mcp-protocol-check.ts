import type { IncomingHttpHeaders } from 'node:http';
import { isInitializeRequest, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { isJsonContentType } from './body-headers';
import { jsonRpcError, requestIdOf } from './json-rpc-error';

/** A refusal the MCP SDK's transport would make, with its status, JSON-RPC code and message. */
export interface McpProtocolProblem {
  readonly status: 400 | 406 | 415;
  readonly code: number;
  readonly message: string;
}

/** The SDK's code for transport-level refusals (`createJsonErrorResponse(4xx, -32000, ...)`). */
const SDK_TRANSPORT_ERROR = -32000;
const INVALID_REQUEST = -32600;

/**
 * The refusals `WebStandardStreamableHTTPServerTransport.handlePostRequest`
 * (SDK 1.32, stateless, JSON responses) makes after the body is parsed,
 * checked in its order, with its status codes, codes and messages, so they
 * can be made before the per-token limiter and cost nothing:
 *
 * 1. Accept must list both application/json and text/event-stream (406); a
 *    substring test, as the SDK's, since Accept is a list.
 * 2. Content-Type must be application/json (415); our body reader refused
 *    anything else already, kept so this function stands alone.
 * 3. A batch may carry at most one initialize request, and then nothing else (400, -32600).
 * 4. Anything but an initialize request with an MCP-Protocol-Version header
 *    must name a version the SDK supports (400).
 *
 * Not repeated: the body-size, parse, batch-size and message-shape checks,
 * which our own pipeline makes earlier and stricter; session checks, which
 * a stateless transport does not make. The SDK still runs all of its checks
 * behind the limiter as a second line.
 *
 * `body` is a shape-checked JSON-RPC message or non-empty batch.
 */
export function mcpProtocolProblem(headers: IncomingHttpHeaders, body: unknown): McpProtocolProblem | undefined {
  const accept = headerValue(headers.accept);
  if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return { status: 406, code: SDK_TRANSPORT_ERROR, message: 'Not Acceptable: Client must accept both application/json and text/event-stream' };
  }
  if (!isJsonContentType(headers['content-type'])) {
    return { status: 415, code: SDK_TRANSPORT_ERROR, message: 'Unsupported Media Type: Content-Type must be application/json' };
  }
  const messages: readonly unknown[] = Array.isArray(body) ? body : [body];
  const initializing = messages.some((message) => isInitializeRequest(message));
  if (initializing && messages.length > 1) {
    return { status: 400, code: INVALID_REQUEST, message: 'Invalid Request: Only one initialization request is allowed' };
  }
  if (!initializing) {
    const version = headerValue(headers['mcp-protocol-version']);
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return {
        status: 400,
        code: SDK_TRANSPORT_ERROR,
        message: `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
      };
    }
  }
  return undefined;
}

/** Express adapter: answers the problem with a JSON-RPC error body, before anything is charged. */
export function createMcpProtocolCheck(): RequestHandler {
  return function mcpProtocolCheck(req: Request, res: Response, next: NextFunction): void {
    const problem = mcpProtocolProblem(req.headers, req.body);
    if (problem === undefined) {
      next();
      return;
    }
    res.status(problem.status).json(jsonRpcError(requestIdOf(req.body), problem.code, problem.message));
  };
}

/** Fetch's Headers joins repeated fields with ", " (what the SDK reads); Node does so for most, arrays for the rest. */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
