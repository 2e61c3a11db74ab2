import type { Request, Response } from 'express';
import type { Decision } from '../window/decision';
import { jsonRpcError, requestIdOf } from './json-rpc-error';
import { refusalBody, refusalStatus } from './refusal-body';
import { eraOfHeaders, refusalCode, type McpEra } from './refusal-code';
import type { RefusalWriter } from './rate-limit-middleware';

export interface McpRefusalWriterOptions {
  /**
   * The MCP era the request speaks, which picks the JSON-RPC code (ADR 0023).
   * Default: from the `MCP-Protocol-Version` header alone (2026-07-28 or later
   * is 'modern'; anything else, the 2025 eras, 'legacy').
   */
  readonly eraOf?: (req: Request, res: Response) => McpEra;
}

/**
 * A `refuse` writer for an MCP route: the status (429, or 503 when a
 * fail-closed store is down) and a JSON-RPC error an MCP client can show. The
 * message says when to retry; `data` carries the figures of the plain JSON
 * refusal. The middleware has already set Retry-After and the rate-limit
 * headers. A batch has no single id, so it is answered with id null, as the
 * JSON-RPC specification asks.
 */
export function createMcpRefusalWriter(options: McpRefusalWriterOptions = {}): RefusalWriter {
  const eraOf = options.eraOf ?? ((req: Request) => eraOfHeaders(req.headers));
  return function writeMcpRefusal(req: Request, res: Response, decision: Decision): void {
    const data = refusalBody(decision);
    const code = refusalCode(eraOf(req, res), decision.reason === 'backend_unavailable' ? 'backend_unavailable' : 'rate_limited');
    res.status(refusalStatus(decision)).json(jsonRpcError(requestIdOf(req.body), code, String(data.message), data));
  };
}
