import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { jsonRpcError, requestIdOf } from './json-rpc-error';

/** The hostnames the MCP SDK's `localhostHostValidation()` accepts. */
export const LOCALHOST_NAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

export type HostCheckErrorCode = 'missing_host' | 'invalid_host' | 'host_not_allowed' | 'origin_not_allowed';

/** Same shape as the MCP SDK's (v2) pure host check: the adapter only turns it into a response. */
export type HostCheck =
  | { readonly ok: true; readonly hostname: string }
  | { readonly ok: false; readonly errorCode: HostCheckErrorCode; readonly message: string };

export type OriginCheck = { readonly ok: true } | Extract<HostCheck, { ok: false }>;

/**
 * Which Host (and Origin) values a request may carry.
 * - `allowedHosts` non-empty: only those (DNS-rebinding protection on).
 * - empty, request arrived on a loopback interface: only localhost names, as
 *   the SDK's `createMcpExpressApp` does for a server bound to localhost.
 * - empty, request arrived from the network: any (a deployment that has not
 *   set ALLOWED_HOSTS; bearer auth still guards every call).
 * See docs/adr/0004-mcp-host-validation.md.
 */
export type HostRule = { readonly kind: 'any' } | { readonly kind: 'list'; readonly hosts: readonly string[] };

export function hostRuleFor(allowedHosts: readonly string[], arrivedOnLoopback: boolean): HostRule {
  if (allowedHosts.length > 0) return { kind: 'list', hosts: allowedHosts.map((h) => h.toLowerCase()) };
  return arrivedOnLoopback ? { kind: 'list', hosts: LOCALHOST_NAMES } : { kind: 'any' };
}

/**
 * Checks a Host header against a rule, port-agnostic like the SDK unless an
 * allowed entry names a port itself ("localhost:8080" matches that port only).
 */
export function checkHost(hostHeader: string | undefined, rule: HostRule): HostCheck {
  if (hostHeader === undefined || hostHeader === '') {
    return { ok: false, errorCode: 'missing_host', message: 'Missing Host header' };
  }
  const parsed = parseAuthority(hostHeader);
  if (parsed === undefined) return { ok: false, errorCode: 'invalid_host', message: 'Invalid Host header' };
  if (!matches(rule, parsed)) {
    return { ok: false, errorCode: 'host_not_allowed', message: `Host ${parsed.hostname} is not allowed` };
  }
  return { ok: true, hostname: parsed.hostname };
}

/** An absent Origin is fine (non-browser clients send none); a present one must name an allowed host. */
export function checkOrigin(originHeader: string | undefined, rule: HostRule): OriginCheck {
  if (originHeader === undefined || rule.kind === 'any') return { ok: true };
  let parsed: { hostname: string; host: string } | undefined;
  try {
    const url = new URL(originHeader);
    parsed = url.host === '' ? undefined : { hostname: url.hostname.toLowerCase(), host: url.host.toLowerCase() };
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || !matches(rule, parsed)) {
    return { ok: false, errorCode: 'origin_not_allowed', message: 'Origin is not allowed' };
  }
  return { ok: true };
}

/** True when the connection reached us on a loopback address (the server is reachable as localhost). */
export function arrivedOnLoopback(req: IncomingMessage): boolean {
  const local = req.socket.localAddress ?? '';
  return local === '::1' || local.startsWith('127.') || local.startsWith('::ffff:127.');
}

export interface HostValidationOptions {
  /** From config.http.allowedHosts; empty = the rule described at `HostRule`. */
  readonly allowedHosts: readonly string[];
}

/** Express adapter: 403 with a JSON-RPC error body, before the body is read. */
export function createHostValidation(options: HostValidationOptions): RequestHandler {
  return function hostValidation(req: Request, res: Response, next: NextFunction): void {
    const rule = hostRuleFor(options.allowedHosts, arrivedOnLoopback(req));
    const host = checkHost(req.headers.host, rule);
    const verdict: OriginCheck = host.ok ? checkOrigin(req.headers.origin, rule) : host;
    if (!verdict.ok) {
      // -32000 is what the SDK's own host validation answers with.
      res.status(403).json(jsonRpcError(requestIdOf(req.body), -32000, verdict.message, { reason: verdict.errorCode }));
      return;
    }
    next();
  };
}

function parseAuthority(value: string): { hostname: string; host: string } | undefined {
  try {
    const url = new URL(`http://${value}`);
    // Anything beyond an authority (a path, credentials) is not a Host header.
    if (url.host === '' || url.username !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '') return undefined;
    return { hostname: url.hostname.toLowerCase(), host: url.host.toLowerCase() };
  } catch {
    return undefined;
  }
}

function matches(rule: HostRule, parsed: { hostname: string; host: string }): boolean {
  if (rule.kind === 'any') return true;
  return rule.hosts.some((entry) => entry === parsed.hostname || entry === parsed.host);
}
