import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { jsonRpcError, requestIdOf } from '../library/express';
import { boundedMemo } from '../shared/bounded-memo';

/** The hostnames the MCP SDK's `localhostHostValidation()` accepts. */
export const LOCALHOST_NAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

export type HostCheckErrorCode =
  | 'missing_host'
  | 'duplicate_host'
  | 'invalid_host'
  | 'hosts_not_configured'
  | 'host_not_allowed'
  | 'origin_not_allowed';

/** What a network arrival gets while ALLOWED_HOSTS is unset: the operator reads it in a 403 body or the access log. */
export const HOSTS_NOT_CONFIGURED_MESSAGE =
  "Host validation is not configured: set ALLOWED_HOSTS to this service's host name, e.g. my-svc-abc123-ew.a.run.app, or ALLOWED_HOSTS=* to accept any Host";

/** Same shape as the MCP SDK's (v2) pure host check: the adapter only turns it into a response. */
export type HostCheck =
  | { readonly ok: true; readonly hostname: string }
  | { readonly ok: false; readonly errorCode: HostCheckErrorCode; readonly message: string };

export type OriginCheck = { readonly ok: true } | Extract<HostCheck, { ok: false }>;

/**
 * Which Host (and Origin) values a request may carry.
 * - `allowAnyHost` (ALLOWED_HOSTS=*): any, by the operator's explicit choice.
 * - `allowedHosts` non-empty: only those (DNS-rebinding protection on).
 * - neither, request arrived on a loopback interface: only localhost names,
 *   as the SDK's `createMcpExpressApp` does for a server bound to localhost.
 * - neither, request arrived from the network: none, with a message naming
 *   the fix. Accepting any Host by default left a deployment open to
 *   rebinding until someone remembered the knob.
 * See docs/adr/0007-client-addresses-and-hosts.md (superseding part of 0004).
 */
export type HostRule =
  | { readonly kind: 'any' }
  | { readonly kind: 'list'; readonly hosts: readonly string[] }
  | { readonly kind: 'unconfigured' };

export interface AllowedHosts {
  /** From config.http.allowedHosts. */
  readonly allowedHosts: readonly string[];
  /** From config.http.allowAnyHost; default false. */
  readonly allowAnyHost?: boolean;
}

export function hostRuleFor(allowed: AllowedHosts, arrivedOnLoopback: boolean): HostRule {
  if (allowed.allowAnyHost === true) return { kind: 'any' };
  if (allowed.allowedHosts.length > 0) return { kind: 'list', hosts: allowed.allowedHosts.map((h) => h.toLowerCase()) };
  return arrivedOnLoopback ? { kind: 'list', hosts: LOCALHOST_NAMES } : { kind: 'unconfigured' };
}

/**
 * Checks the request's Host header(s) against a rule, port-agnostic like the
 * SDK unless an allowed entry names a port itself ("localhost:8080" matches
 * that port only). Pass every Host value the request carried
 * (`hostHeaderValues(req.rawHeaders)`): two Host headers are refused, since
 * Node keeps the first and a proxy or cache in front may have used the other.
 */
export function checkHost(hostHeaders: string | readonly string[] | undefined, rule: HostRule): HostCheck {
  const values = hostHeaders === undefined ? [] : typeof hostHeaders === 'string' ? [hostHeaders] : hostHeaders;
  if (values.length > 1) return { ok: false, errorCode: 'duplicate_host', message: 'More than one Host header' };
  const hostHeader = values[0];
  if (hostHeader === undefined || hostHeader === '') {
    return { ok: false, errorCode: 'missing_host', message: 'Missing Host header' };
  }
  const parsed = parseAuthority(hostHeader);
  if (parsed === undefined) return { ok: false, errorCode: 'invalid_host', message: 'Invalid Host header' };
  if (rule.kind === 'unconfigured') return { ok: false, errorCode: 'hosts_not_configured', message: HOSTS_NOT_CONFIGURED_MESSAGE };
  if (!matches(rule, parsed)) {
    return { ok: false, errorCode: 'host_not_allowed', message: `Host ${parsed.hostname} is not allowed` };
  }
  return { ok: true, hostname: parsed.hostname };
}

/**
 * The authority of an absolute-form request target (`POST http://a.example/mcp`),
 * held to the same rule as Host: RFC 9112 §3.2.2 has a server take the
 * target's authority over Host, so a target naming another host passed the
 * Host check untouched. Origin-form targets (`/mcp`) have none: ok. The Host
 * header is still checked on its own, so both must be allowed.
 */
export function checkRequestTarget(target: string, rule: HostRule): OriginCheck {
  if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) return { ok: true };
  let parsed: { hostname: string; host: string } | undefined;
  try {
    const url = new URL(target);
    parsed = (url.protocol === 'http:' || url.protocol === 'https:') && url.host !== '' && url.username === '' && url.password === '' ? { hostname: url.hostname.toLowerCase(), host: url.host.toLowerCase() } : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined) return { ok: false, errorCode: 'invalid_host', message: 'Invalid request target: an absolute-form target must be an http(s) URL with a host' };
  if (rule.kind === 'unconfigured') return { ok: false, errorCode: 'hosts_not_configured', message: HOSTS_NOT_CONFIGURED_MESSAGE };
  if (!matches(rule, parsed)) return { ok: false, errorCode: 'host_not_allowed', message: `Host ${parsed.hostname} (the request target's) is not allowed` };
  return { ok: true };
}

/** An absent Origin is fine (non-browser clients send none); a present one must name an allowed host. */
export function checkOrigin(originHeader: string | undefined, rule: HostRule): OriginCheck {
  if (originHeader === undefined || rule.kind === 'any') return { ok: true };
  if (rule.kind === 'unconfigured') return { ok: false, errorCode: 'hosts_not_configured', message: HOSTS_NOT_CONFIGURED_MESSAGE };
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

/** Every Host value in a request's raw headers (`req.rawHeaders`: name, value, name, value, ...), in order. */
export function hostHeaderValues(rawHeaders: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() === 'host') values.push(rawHeaders[i + 1] as string);
  }
  return values;
}

/** A malformed request is 400; a well-formed one we will not serve for this Host is 403 (as before, and as the SDK does). */
export function hostCheckStatus(errorCode: HostCheckErrorCode): 400 | 403 {
  return errorCode === 'duplicate_host' ? 400 : 403;
}

export type HostValidationOptions = AllowedHosts;

/** Express adapter: 400/403 with a JSON-RPC error body, before the body is read. */
export function createHostValidation(options: HostValidationOptions): RequestHandler {
  // The two rules there can be, made once rather than per request.
  const loopbackRule = hostRuleFor(options, true);
  const otherRule = hostRuleFor(options, false);
  return function hostValidation(req: Request, res: Response, next: NextFunction): void {
    const rule = arrivedOnLoopback(req) ? loopbackRule : otherRule;
    const host = checkHost(hostHeaderValues(req.rawHeaders), rule);
    const target = host.ok ? checkRequestTarget(req.originalUrl ?? req.url ?? '', rule) : host;
    const verdict: OriginCheck = target.ok ? checkOrigin(req.headers.origin, rule) : target;
    if (!verdict.ok) {
      // -32000 is what the SDK's own host validation answers with.
      res
        .status(hostCheckStatus(verdict.errorCode))
        .json(jsonRpcError(requestIdOf(req.body), -32000, verdict.message, { reason: verdict.errorCode }));
      return;
    }
    next();
  };
}

// A WHATWG URL parse per request, of the one or two Host values a service is called by.
const parseAuthority = boundedMemo(computeAuthority);

function computeAuthority(value: string): { hostname: string; host: string } | undefined {
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
  if (rule.kind === 'unconfigured') return false;
  return rule.hosts.some((entry) => entry === parsed.hostname || entry === parsed.host);
}
