import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import express, { type ErrorRequestHandler, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { JsonRpcCode, jsonRpcError, requestIdOf, type JsonRpcErrorBody } from './json-rpc-error';

export interface BodyFailure {
  readonly status: number;
  readonly body: JsonRpcErrorBody;
}

/**
 * Maps a body-parser error to the JSON-RPC answer the spec names. Keyed on
 * body-parser's stable `type` field, never on its message text.
 */
export function bodyParserFailure(error: unknown, maxBodyBytes: number): BodyFailure | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const type = (error as { type?: unknown }).type;
  switch (type) {
    case 'entity.too.large':
      return {
        status: 413,
        body: jsonRpcError(null, JsonRpcCode.PayloadTooLarge, `Request body is larger than ${maxBodyBytes} bytes`, { maxBodyBytes }),
      };
    case 'entity.parse.failed':
      return { status: 400, body: jsonRpcError(null, JsonRpcCode.ParseError, 'Parse error: the body is not valid JSON') };
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return { status: 415, body: jsonRpcError(null, JsonRpcCode.InvalidRequest, 'Unsupported body encoding: send UTF-8 JSON') };
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return { status: 400, body: jsonRpcError(null, JsonRpcCode.InvalidRequest, 'The request body could not be read') };
    default:
      return undefined;
  }
}

/** Why a parsed body is not something MCP can act on, or undefined when it is. */
export function jsonRpcShapeProblem(body: unknown): string | undefined {
  if (Array.isArray(body)) {
    if (body.length === 0) return 'Invalid Request: an empty batch';
    return body.every(isJsonRpcMessage) ? undefined : 'Invalid Request: every batch entry must be a JSON-RPC 2.0 message';
  }
  return isJsonRpcMessage(body) ? undefined : 'Invalid Request: expected a JSON-RPC 2.0 request, notification or response object';
}

function isJsonRpcMessage(value: unknown): boolean {
  return JSONRPCMessageSchema.safeParse(value).success;
}

/** How many JSON-RPC messages a parsed (and shape-checked) body carries; a batch costs one per message. */
export function messageCount(body: unknown): number {
  return Array.isArray(body) ? Math.max(1, body.length) : 1;
}

/**
 * Body handling for /mcp, in order: Content-Type must be JSON (415), the body
 * at most `maxBodyBytes` (413), valid JSON (400, -32700), and a JSON-RPC
 * message or batch (400, -32600). All answers are JSON-RPC error objects.
 */
export function createJsonRpcBody(options: { readonly maxBodyBytes: number }): Array<RequestHandler | ErrorRequestHandler> {
  const requireJson: RequestHandler = (req, res, next) => {
    if (req.is('application/json') === false || req.headers['content-type'] === undefined) {
      res
        .status(415)
        .json(jsonRpcError(null, JsonRpcCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json'));
      return;
    }
    next();
  };
  // strict: false lets `"text"` or `42` through the parser, so they get -32600 (valid JSON, not a request) rather than -32700.
  const parse = express.json({ limit: options.maxBodyBytes, strict: false, type: 'application/json' });
  const mapErrors: ErrorRequestHandler = (error: unknown, _req: Request, res: Response, next: NextFunction) => {
    const failure = bodyParserFailure(error, options.maxBodyBytes);
    if (failure === undefined) {
      next(error);
      return;
    }
    // The client will not read a body it has been told is too large; end the connection after answering.
    if (failure.status === 413) res.setHeader('Connection', 'close');
    res.status(failure.status).json(failure.body);
  };
  const requireJsonRpc: RequestHandler = (req, res, next) => {
    const problem = jsonRpcShapeProblem(req.body);
    if (problem !== undefined) {
      res.status(400).json(jsonRpcError(requestIdOf(req.body), JsonRpcCode.InvalidRequest, problem));
      return;
    }
    next();
  };
  return [requireJson, parse, mapErrors, requireJsonRpc];
}
