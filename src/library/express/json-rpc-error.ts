import type { Response } from 'express';

/**
 * JSON-RPC error codes on the wire. -32700..-32600 are the spec's; the
 * -320xx range is for server-defined errors (JSON-RPC 2.0 §5.1).
 */
export const JsonRpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  Unauthorized: -32001,
  Forbidden: -32003,
  RateLimited: -32029,
  BackendUnavailable: -32053,
  PayloadTooLarge: -32013,
} as const;

export type JsonRpcId = string | number | null;

export interface JsonRpcErrorBody {
  readonly jsonrpc: '2.0';
  readonly id: JsonRpcId;
  readonly error: { readonly code: number; readonly message: string; readonly data?: unknown };
}

export function jsonRpcError(id: JsonRpcId, code: number, message: string, data?: unknown): JsonRpcErrorBody {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** The id of the request when the body parsed as a single JSON-RPC request; null otherwise (as the spec asks). */
export function requestIdOf(body: unknown): JsonRpcId {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const id = (body as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

export function sendJsonRpcError(res: Response, status: number, body: JsonRpcErrorBody): void {
  res.status(status).json(body);
}
