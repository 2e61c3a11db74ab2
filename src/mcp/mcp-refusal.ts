import type { Request, Response } from 'express';
import { jsonRpcError, requestIdOf } from '../http/json-rpc-error';
import { eraOfHeaders, refusalCode } from '../http/refusal-code';
import { mcpEraOf } from '../http/request-locals';
import { refusalBody, refusalStatus } from '../http/refusal-body';
import type { Decision } from '../limiter/decision';

/**
 * The `refuse` writer for /mcp. The rate-limit middleware has already set
 * Retry-After and every rate-limit header; this adds the status (429, or 503
 * when a fail-closed backend is down) and a JSON-RPC error an MCP client can
 * surface: the message says when to retry, `data` carries the same figures as
 * the plain refusal body. Its code is the era's (./refusal-code: ADR 0023).
 */
export function writeMcpRefusal(req: Request, res: Response, decision: Decision): void {
  const data = refusalBody(decision);
  const era = mcpEraOf(res) ?? eraOfHeaders(req.headers);
  const code = refusalCode(era, decision.reason === 'backend_unavailable' ? 'backend_unavailable' : 'rate_limited');
  // A batch has no single id; the spec answers such errors with id null.
  res.status(refusalStatus(decision)).json(jsonRpcError(requestIdOf(req.body), code, String(data.message), data));
}
