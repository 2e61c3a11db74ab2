import type { Request, Response } from 'express';
import { JsonRpcCode, jsonRpcError, requestIdOf } from '../http/json-rpc-error';
import { refusalBody, refusalStatus } from '../http/refusal-body';
import type { Decision } from '../limiter/decision';

/**
 * The `refuse` writer for /mcp. The rate-limit middleware has already set
 * Retry-After and every rate-limit header; this adds the status (429, or 503
 * when a fail-closed backend is down) and a JSON-RPC error an MCP client can
 * surface: the message says when to retry, `data` carries the same figures as
 * the plain refusal body.
 */
export function writeMcpRefusal(req: Request, res: Response, decision: Decision): void {
  const data = refusalBody(decision);
  const code = decision.reason === 'backend_unavailable' ? JsonRpcCode.BackendUnavailable : JsonRpcCode.RateLimited;
  // A batch has no single id; the spec answers such errors with id null.
  res.status(refusalStatus(decision)).json(jsonRpcError(requestIdOf(req.body), code, String(data.message), data));
}
