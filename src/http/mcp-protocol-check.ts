import type { IncomingHttpHeaders } from 'node:http';
import { classifyInboundRequest, isInitializeRequest, PROTOCOL_VERSION_META_KEY, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { isJsonContentType } from './body-headers';
import { stripOws } from './header-ows';
import { isJsonRpcRequest } from './json-rpc-shape';
import { plainModernRoute } from './plain-modern-request';
import { jsonRpcError, requestIdOf } from '../library/express';
import { modernRequestProblem } from './modern-header-check';
import { setMcpEra, type McpEra } from './request-locals';

/** A refusal the MCP layer would make, with its status, JSON-RPC code and message, made before anything is charged. */
export interface McpProtocolProblem {
  readonly status: number;
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

export type McpRequestInspection = { readonly ok: true; readonly era: McpEra } | { readonly ok: false; readonly problem: McpProtocolProblem };

/** The SDK's code for transport-level refusals (`createJsonErrorResponse(4xx, -32000, ...)`). */
const SDK_TRANSPORT_ERROR = -32000;
const INVALID_REQUEST = -32600;

/**
 * The refusals the MCP SDK (2.x, stateless) would make after the body is
 * parsed, made here instead so they cost nothing, and the era the request
 * belongs to, decided once by the SDK's own classifier:
 *
 * 1. Accept must allow JSON: absent, `application/json`, `application/*` or
 *    `*\/*` (406 otherwise). Every answer here is JSON, so a client need not
 *    also offer text/event-stream, which the SDK's 2025 transport insists on.
 * 2. Content-Type must be application/json (415); our body reader refused
 *    anything else already, kept so this function stands alone.
 * 3. `classifyInboundRequest` (the SDK's era decision and its ladder's first
 *    rungs): a 2026-07-28 request (its `_meta` envelope) or a 2025-era one;
 *    a malformed envelope or a header that contradicts the body is refused
 *    with the SDK's status, code and message. The ordinary request of
 *    either era (plainLegacyRequest, ./plain-modern-request) is routed in
 *    plain code, as the classifier would route it.
 * 4. 2026 era: the rungs the SDK's entry asks next (./modern-header-check):
 *    a revision it serves (-32022), then `MCP-Protocol-Version`, `Mcp-Method`
 *    and a `Mcp-Name` that mirrors the body (-32020), all 400.
 * 5. 2025 era: a batch may carry one initialize request and nothing else
 *    (400, -32600); anything but initialize with an MCP-Protocol-Version
 *    header must name a version the SDK supports (400).
 *
 * Not repeated: the 2026 client-capability rung (-32021): the SDK 2.4's
 * table of methods that require a client capability is empty.
 *
 * `body` is a shape-checked JSON-RPC message or non-empty batch.
 */
export function inspectMcpRequest(headers: IncomingHttpHeaders, body: unknown): McpRequestInspection {
  if (!acceptsJson(headerValue(headers.accept))) {
    return refuse(406, SDK_TRANSPORT_ERROR, 'Not Acceptable: this server answers application/json; send Accept: application/json (or no Accept)');
  }
  if (!isJsonContentType(headers['content-type'])) {
    return refuse(415, SDK_TRANSPORT_ERROR, 'Unsupported Media Type: Content-Type must be application/json');
  }
  const outcome = plainLegacyRequest(headers, body)
    ? LEGACY
    : (plainModernRoute(headers, body) ??
      classifyInboundRequest({
        httpMethod: 'POST',
        protocolVersionHeader: headerValue(headers['mcp-protocol-version']),
        mcpMethodHeader: headerValue(headers['mcp-method']),
        mcpNameHeader: headerValue(headers['mcp-name']),
        body,
      }));
  if (outcome.kind === 'reject') {
    return { ok: false, problem: { status: outcome.httpStatus, code: outcome.code, message: outcome.message, ...(outcome.data === undefined ? {} : { data: outcome.data }) } };
  }
  if (outcome.kind === 'modern') {
    const problem = modernRequestProblem(headers, outcome);
    return problem === undefined ? { ok: true, era: 'modern' } : { ok: false, problem };
  }

  const messages: readonly unknown[] = Array.isArray(body) ? body : [body];
  // The schema's method is a literal: anything else fails it, and is spared the parse of a whole initialize request.
  const initializing = messages.some((message) => (message as { method?: unknown }).method === 'initialize' && isInitializeRequest(message));
  if (initializing && messages.length > 1) {
    return refuse(400, INVALID_REQUEST, 'Invalid Request: Only one initialization request is allowed');
  }
  if (!initializing) {
    const version = headerValue(headers['mcp-protocol-version']);
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return refuse(
        400,
        SDK_TRANSPORT_ERROR,
        `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
      );
    }
  }
  return { ok: true, era: 'legacy' };
}

/** What the SDK's classifier answers for a plain 2025-era request. */
const LEGACY = { kind: 'legacy' } as const;

/** The first 2026-era revision: the SDK's classifier compares revisions as strings against it. */
const FIRST_MODERN_REVISION = '2026-07-28';

/**
 * A single JSON-RPC request that is not `initialize`, carries no 2026-era
 * envelope claim (the protocol-version `_meta` key) and names no 2026-era
 * revision in its header: the SDK's classifier routes it to the 2025 era
 * without a refusal (`classifyRequestBody`'s last case), and most 2025-era
 * traffic is this. Decided here without its zod parses; every other body
 * goes through the classifier. Pinned against it by test/unit/mcp-protocol-check-fast.test.ts.
 */
export function plainLegacyRequest(headers: IncomingHttpHeaders, body: unknown): boolean {
  if (!isJsonRpcRequest(body)) return false;
  const { method, params } = body as { method: string; params?: { _meta?: unknown } };
  if (method === 'initialize') return false;
  const meta = params?._meta;
  if (meta !== null && typeof meta === 'object' && !Array.isArray(meta) && PROTOCOL_VERSION_META_KEY in meta) return false;
  const version = headerValue(headers['mcp-protocol-version']);
  return version === undefined || stripOws(version) < FIRST_MODERN_REVISION;
}

/** The problem alone, for callers that only ask whether a request would be refused. */
export function mcpProtocolProblem(headers: IncomingHttpHeaders, body: unknown): McpProtocolProblem | undefined {
  const inspection = inspectMcpRequest(headers, body);
  return inspection.ok ? undefined : inspection.problem;
}

/**
 * Whether an Accept value lets us answer with application/json: no Accept
 * (RFC 9110 §12.5.1: any type), or a media range matching it with q > 0.
 */
export function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((range) => {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    if (type !== 'application/json' && type !== 'application/*' && type !== '*/*') return false;
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** Express adapter: answers the problem with a JSON-RPC error body, before anything is charged; otherwise notes the era. */
export function createMcpProtocolCheck(): RequestHandler {
  return function mcpProtocolCheck(req: Request, res: Response, next: NextFunction): void {
    const inspection = inspectMcpRequest(req.headers, req.body);
    if (inspection.ok) {
      setMcpEra(res, inspection.era);
      next();
      return;
    }
    const { problem } = inspection;
    res.status(problem.status).json(jsonRpcError(requestIdOf(req.body), problem.code, problem.message, problem.data));
  };
}

function refuse(status: number, code: number, message: string): McpRequestInspection {
  return { ok: false, problem: { status, code, message } };
}

/** Fetch's Headers joins repeated fields with ", " (what the SDK reads); Node does so for most, arrays for the rest. */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
