import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { bodyEncodingProblem, declaredLengthProblem, type BodyHeaderProblem } from './body-headers';
import { JsonRpcCode, jsonRpcError, type JsonRpcErrorBody, requestIdOf } from '../library/express';
import { closeAfterResponse, markBodyRead } from './lingering-close';
import { scanJsonStructure, type JsonStructureLimits } from './json-structure-scan';
import { readBoundedBody, takeBufferedBody, type BodyRead, type BodyReadLimits } from './read-body';
import { isJsonRpcMessage } from './json-rpc-shape';
import { continueIfDeferred } from './expect-continue';

/** The SDK's code for transport-level refusals; used where JSON-RPC itself names none. */
const TRANSPORT_ERROR = -32000;

export interface BodyFailure {
  readonly status: number;
  readonly body: JsonRpcErrorBody;
  /** The body was left (partly) unread: end the connection after answering rather than drain it. */
  readonly closeConnection?: boolean;
}

export type ParsedBody = { readonly ok: true; readonly body: unknown } | ({ readonly ok: false } & BodyFailure);

/** What a header problem is answered with; the body is still unread, so the connection closes. */
export function headerFailure(problem: BodyHeaderProblem): BodyFailure {
  switch (problem.problem) {
    case 'declared_too_large':
      return tooLarge(problem.maxBodyBytes);
    case 'not_json':
      return { status: 415, closeConnection: true, body: jsonRpcError(null, TRANSPORT_ERROR, 'Unsupported Media Type: Content-Type must be application/json', { reason: 'not_json' }) };
    case 'unsupported_charset':
      return {
        status: 415,
        closeConnection: true,
        body: jsonRpcError(null, TRANSPORT_ERROR, `Unsupported Media Type: charset ${problem.charset}; send UTF-8 JSON`, { reason: 'unsupported_charset' }),
      };
    case 'unsupported_encoding':
      return {
        status: 415,
        closeConnection: true,
        body: jsonRpcError(null, TRANSPORT_ERROR, `Unsupported Content-Encoding ${problem.contentEncoding}; send the body uncompressed (identity)`, {
          reason: 'unsupported_encoding',
        }),
      };
  }
}

/** What a failed read is answered with; every one leaves bytes unread, so the connection closes. */
export function readFailure(read: Exclude<BodyRead, { ok: true }>): BodyFailure {
  switch (read.problem) {
    case 'too_large':
      return tooLarge(read.maxBodyBytes);
    case 'idle_timeout':
      return {
        status: 408,
        closeConnection: true,
        body: jsonRpcError(null, TRANSPORT_ERROR, `Request Timeout: no part of the body arrived for ${read.idleTimeoutMs} ms`, {
          reason: 'body_idle_timeout',
          idleTimeoutMs: read.idleTimeoutMs,
        }),
      };
    case 'total_timeout':
      return {
        status: 408,
        closeConnection: true,
        body: jsonRpcError(null, TRANSPORT_ERROR, `Request Timeout: the body took longer than ${read.totalTimeoutMs} ms to arrive`, {
          reason: 'body_total_timeout',
          totalTimeoutMs: read.totalTimeoutMs,
        }),
      };
    case 'aborted':
      return { status: 400, closeConnection: true, body: jsonRpcError(null, JsonRpcCode.InvalidRequest, 'The request body could not be read') };
  }
}

function tooLarge(maxBodyBytes: number): BodyFailure {
  return {
    status: 413,
    closeConnection: true,
    body: jsonRpcError(null, JsonRpcCode.PayloadTooLarge, `Request body is larger than ${maxBodyBytes} bytes`, { maxBodyBytes }),
  };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Raw bytes to a JSON-RPC message or batch, cheapest check first: the
 * structure scan (depth, batch size; linear, stops at its bound), then
 * UTF-8 decoding and JSON.parse, then the JSON-RPC shape (the SDK's schemas in plain code, ./json-rpc-shape, per message,
 * at most `maxBatchMessages` of them). Nothing deep or huge reaches the
 * parser or zod.
 */
export function parseJsonRpcBody(bytes: Uint8Array, limits: JsonStructureLimits): ParsedBody {
  const scan = scanJsonStructure(bytes, limits);
  if (!scan.ok) {
    const message =
      scan.problem === 'too_deep'
        ? `Invalid Request: JSON nested deeper than ${scan.maxDepth} levels`
        : `Invalid Request: Batch must not exceed ${scan.maxBatchMessages} messages`;
    const data = scan.problem === 'too_deep' ? { reason: scan.problem, maxDepth: scan.maxDepth } : { reason: scan.problem, maxBatchMessages: scan.maxBatchMessages };
    return { ok: false, status: 400, body: jsonRpcError(null, JsonRpcCode.InvalidRequest, message, data) };
  }
  let body: unknown;
  try {
    body = JSON.parse(utf8.decode(bytes));
  } catch {
    return { ok: false, status: 400, body: jsonRpcError(null, JsonRpcCode.ParseError, 'Parse error: the body is not valid UTF-8 JSON') };
  }
  const problem = jsonRpcShapeProblem(body);
  if (problem !== undefined) return { ok: false, status: 400, body: jsonRpcError(requestIdOf(body), JsonRpcCode.InvalidRequest, problem) };
  return { ok: true, body };
}

/** Why a parsed body is not something MCP can act on, or undefined when it is. */
export function jsonRpcShapeProblem(body: unknown): string | undefined {
  if (Array.isArray(body)) {
    if (body.length === 0) return 'Invalid Request: an empty batch';
    return body.every(isJsonRpcMessage) ? undefined : 'Invalid Request: every batch entry must be a JSON-RPC 2.0 message';
  }
  return isJsonRpcMessage(body) ? undefined : 'Invalid Request: expected a JSON-RPC 2.0 request, notification or response object';
}

function answer(req: Request, res: Response, failure: BodyFailure): void {
  // The rest of a refused body is not read into memory or parsed; the connection ends after a short discard.
  if (failure.closeConnection === true) closeAfterResponse(req, res);
  res.status(failure.status).json(failure.body);
}

/** 413 from Content-Length alone, before anything else is done with the request; mounted before auth. */
export function createDeclaredLengthCheck(options: { readonly maxBodyBytes: number }): RequestHandler {
  return function declaredLengthCheck(req: Request, res: Response, next: NextFunction): void {
    const problem = declaredLengthProblem(req.headers, options.maxBodyBytes);
    if (problem === undefined) next();
    else answer(req, res, headerFailure(problem));
  };
}

export type JsonRpcBodyOptions = BodyReadLimits & JsonStructureLimits;

/**
 * Reads and parses /mcp's body, after auth: Content-Type and Content-Encoding
 * (415), the bounded read (413, 408), the structure scan (400, -32600),
 * JSON.parse (400, -32700) and the JSON-RPC shape (400, -32600). Sets
 * `req.body` to the parsed message or batch. Every answer is a JSON-RPC error.
 */
export function createJsonRpcBody(options: JsonRpcBodyOptions): RequestHandler {
  return function jsonRpcBody(req: Request, res: Response, next: NextFunction): void {
    const headerProblem = bodyEncodingProblem(req.headers);
    if (headerProblem !== undefined) {
      answer(req, res, headerFailure(headerProblem));
      return;
    }
    markBodyRead(req);
    // Only now, every check that needs no body passed: invite a client that waits on Expect: 100-continue.
    continueIfDeferred(req, res);
    const buffered = takeBufferedBody(req, options.maxBodyBytes);
    if (buffered !== undefined) {
      parsedInto(req, res, next, buffered, options);
      return;
    }
    readBoundedBody(req, options)
      .then((read) => {
        if (!read.ok) answer(req, res, readFailure(read));
        else parsedInto(req, res, next, read.bytes, options);
      })
      // A fault while parsing reaches the error handler as a 500, never an unhandled rejection.
      .catch(next);
  };
}

/** The body parsed and checked into `req.body`, then on; or its 400. */
function parsedInto(req: Request, res: Response, next: NextFunction, bytes: Buffer, options: JsonRpcBodyOptions): void {
  const parsed = parseJsonRpcBody(bytes, options);
  if (!parsed.ok) {
    answer(req, res, parsed);
    return;
  }
  req.body = parsed.body;
  next();
}
