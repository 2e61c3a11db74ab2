import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { tokenOf } from '../http/request-locals';
import { decisionOf } from '../http/request-locals';
import type { Decision } from '../library';
import type { LogFields, Logger } from '../shared/logger';
import { decodeForLog, isSensitiveKey, redactUrlComponent } from './redact';
import { traceContextFromHeaders } from './trace-context';
import { MAX_MEMO_ENTRIES } from '../shared/bounded-memo';

export interface RequestLogOptions {
  /** Qualifies trace ids (`projects/P/traces/T`); config.firebase.projectId. */
  readonly projectId?: string;
  /** The public id of the caller's token; default `res.locals.token?.id`, set by the auth middleware. */
  readonly tokenIdOf?: (res: Response) => string | undefined;
}

/**
 * One entry per request, written when the response has been sent (or the
 * client went away): the request in Cloud Logging's httpRequest shape, its
 * trace, the token id and the rate-limit decision. Every `shared: false`
 * decision is therefore in the logs with its reason.
 *
 * Severity: WARNING when the decision was degraded by the shared backend
 * (`local_fallback`, `backend_unavailable`); ERROR for other 5xx; INFO
 * otherwise, including 429s (the client's limit, not our fault) and the
 * memory backend's ordinary `shared: false` (that is how it always counts).
 *
 * Never logged: headers (Authorization), request bodies, query values of
 * sensitive-looking parameters.
 */
export function createRequestLogMiddleware(logger: Logger, options: RequestLogOptions = {}): RequestHandler {
  const watch: LogWatch = { logger, projectId: options.projectId, tokenIdOf: options.tokenIdOf ?? ((res: Response) => tokenOf(res)?.id) };
  return function requestLog(_req: Request, res: Response, next: NextFunction): void {
    const logged = res as LoggedResponse;
    logged[STARTED_MS] = performance.now();
    logged[WATCH] = watch;
    // One listener, not 'finish' and 'close': 'close' follows every response, and without 'finish' before it the client hung up first.
    // 'on', not 'once': close comes once, and once() wraps the listener in a new function per request.
    res.on('close', logOnClose);
    next();
  };
}

/** What the shared close listener needs, kept on the response: no closure is built per request. */
interface LogWatch {
  readonly logger: Logger;
  readonly projectId: string | undefined;
  readonly tokenIdOf: (res: Response) => string | undefined;
}

const STARTED_MS = Symbol('requestStartedMs');
const WATCH = Symbol('requestLogWatch');
type LoggedResponse = Response & { [STARTED_MS]?: number; [WATCH]?: LogWatch };

function logOnClose(this: LoggedResponse): void {
  logRequest(this);
}

function logRequest(res: LoggedResponse): void {
  const req = res.req;
  const { logger, projectId, tokenIdOf } = res[WATCH] as LogWatch;
  const aborted = !res.writableFinished;
  const latencyMs = performance.now() - (res[STARTED_MS] as number);
  const decision = decisionOf(res);
  const path = safeRequestUrl(req.originalUrl ?? req.url);
  const fields: LogFields = {
    event: 'http.request',
    httpRequest: httpRequestOf(req, res, path, latencyMs),
    ...traceContextFromHeaders(req.headers, projectId),
    tokenId: tokenIdOf(res),
    rateLimit: decision === undefined ? undefined : decisionFields(decision),
    aborted: aborted || undefined,
  };
  const message = `${req.method} ${path} ${aborted && !res.headersSent ? 'aborted' : res.statusCode}`;
  const severity = severityOf(res.statusCode, decision);
  if (severity === 'WARNING') logger.warn(message, fields);
  else if (severity === 'ERROR') logger.error(message, fields);
  else logger.info(message, fields);
}

/** What shows in the logs of a decision; `shared` and `reason` are the point of logging it. */
export function decisionFields(decision: Decision): LogFields {
  return {
    allowed: decision.allowed,
    limit: decision.limit,
    remaining: decision.remaining,
    shared: decision.shared,
    reason: decision.reason,
    policy: decision.policyName,
  };
}

export function severityOf(status: number, decision: Decision | undefined): 'INFO' | 'WARNING' | 'ERROR' {
  if (decision?.reason === 'local_fallback' || decision?.reason === 'backend_unavailable') return 'WARNING';
  return status >= 500 ? 'ERROR' : 'INFO';
}

/**
 * The path and the harmless part of the query, as logged (message and
 * httpRequest.requestUrl alike). Parameters named like a credential (token,
 * key, secret, ..., in any encoding) are dropped: some clients put a token in
 * the URL when they cannot set a header. Every other path segment, key and
 * value is checked in its percent-decoded form and masked when it holds a
 * secret, so this is safe even in front of a logger that does not redact.
 */
export function safeRequestUrl(url: string): string {
  if (LOGGED_AS_IS.has(url)) return url;
  const safe = computeSafeRequestUrl(url);
  // Only a URL that is logged as it came is kept: one that held a secret must not outlive its request in a memo.
  if (safe === url) {
    if (LOGGED_AS_IS.size >= MAX_MEMO_ENTRIES) LOGGED_AS_IS.clear();
    LOGGED_AS_IS.add(url);
  }
  return safe;
}

/** The URLs (most often just "/mcp") whose safe form is the URL itself, so each is checked once. */
const LOGGED_AS_IS = new Set<string>();

function computeSafeRequestUrl(url: string): string {
  const q = url.indexOf('?');
  const safePath = (q === -1 ? url : url.slice(0, q)).split('/').map(redactUrlComponent).join('/');
  if (q === -1) return safePath;
  const kept: string[] = [];
  for (const pair of url.slice(q + 1).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = eq === -1 ? pair : pair.slice(0, eq);
    if (isSensitiveKey(decodeForLog(key.replace(/\+/g, ' ')))) continue;
    kept.push(eq === -1 ? redactUrlComponent(key) : `${redactUrlComponent(key)}=${redactUrlComponent(pair.slice(eq + 1))}`);
  }
  return kept.length === 0 ? safePath : `${safePath}?${kept.join('&')}`;
}

function httpRequestOf(req: Request, res: Response, requestUrl: string, latencyMs: number): LogFields {
  const responseSize = res.getHeader('content-length');
  const requestSize = req.headers['content-length'];
  return {
    requestMethod: req.method,
    requestUrl,
    status: res.statusCode,
    // Cloud Logging reads a duration from stdout JSON as a string in seconds.
    // performance.now(), not hrtime.bigint(): the same microseconds without three BigInts per request.
    latency: `${(latencyMs / 1000).toFixed(6)}s`,
    userAgent: req.get('user-agent'),
    // Express's req.ip honours `trust proxy`, so on Cloud Run this is the client, not Google's front end.
    remoteIp: req.ip,
    responseSize: responseSize === undefined ? undefined : String(responseSize),
    requestSize: requestSize === undefined ? undefined : String(requestSize),
    protocol: `HTTP/${req.httpVersion}`,
  };
}
