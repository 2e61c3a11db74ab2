import type { IncomingHttpHeaders } from 'node:http';
import { UnsupportedProtocolVersionError, type InboundModernRoute } from '@modelcontextprotocol/server';
import { stripOws } from './header-ows';

/** A refusal of a 2026-07-28 request: the HTTP status, JSON-RPC code, message and data the SDK's entry answers with. */
export interface ModernRequestProblem {
  readonly status: number;
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/**
 * The revisions of the 2026 era the SDK's entry serves (its
 * `SUPPORTED_MODERN_PROTOCOL_VERSIONS`, not exported). Held to the SDK by
 * test/unit/mcp-protocol-check.test.ts: an SDK that serves another revision
 * fails it.
 */
export const SERVED_MODERN_REVISIONS: readonly string[] = ['2026-07-28'];

/** SEP-2243's HeaderMismatch: the code the SDK answers every standard-header refusal with. */
const HEADER_MISMATCH = -32020;

/** Which body field the `Mcp-Name` header mirrors, per method (the SDK's `MCP_NAME_HEADER_SOURCE`). */
const MCP_NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

const BASE64_PREFIX = '=?base64?';
const BASE64_SUFFIX = '?=';
const BASE64_CANONICAL = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The rungs of the SDK's 2026 ladder that come after classification and
 * before any handler runs: the served-revision gate (-32022) and the
 * standard-header rung (-32020: `MCP-Protocol-Version`, `Mcp-Method` and
 * `Mcp-Name` present, and `Mcp-Name` equal to the body's name). The SDK
 * answers them only inside its entry, behind our limiter; asked here, before
 * the charge, such a request is refused the same way and costs nothing.
 * Same order, status, code, message and data as the SDK 2.4 entry
 * (`serveModern`), held to it by test.
 */
export function modernRequestProblem(headers: IncomingHttpHeaders, route: InboundModernRoute): ModernRequestProblem | undefined {
  const revision = route.classification.revision;
  if (revision === undefined || !SERVED_MODERN_REVISIONS.includes(revision)) {
    const error = new UnsupportedProtocolVersionError({ supported: [...SERVED_MODERN_REVISIONS], requested: revision ?? 'unknown' });
    return { status: 400, code: error.code, message: error.message, data: error.data };
  }
  // Notifications are exempt: the spec requires the headers on requests only.
  if (route.messageKind !== 'request') return undefined;
  const method = route.message.method;
  if (headerValue(headers['mcp-protocol-version']) === undefined) {
    return mismatch(
      '(missing)',
      `the body envelope names protocol version ${revision} but the required MCP-Protocol-Version header is absent`,
    );
  }
  if (headerValue(headers['mcp-method']) === undefined) {
    return mismatch('(missing)', `the body names method ${method} but the required Mcp-Method header is absent`);
  }
  const field = Object.hasOwn(MCP_NAME_SOURCE, method) ? MCP_NAME_SOURCE[method] : undefined;
  if (field === undefined) return undefined;
  const params = route.message.params as Record<string, unknown> | undefined;
  const raw = params !== null && typeof params === 'object' && !Array.isArray(params) ? params[field] : undefined;
  const bodyValue = typeof raw === 'string' ? raw : undefined;
  const nameHeader = headerValue(headers['mcp-name']);
  if (nameHeader === undefined) {
    return bodyValue === undefined ? undefined : mismatch('(missing)', `the body carries params.${field}="${bodyValue}" but the required Mcp-Name header is absent`);
  }
  const normalized = stripOws(nameHeader);
  const decoded = decodeSentinel(normalized);
  if (decoded === undefined) return mismatch(normalized, 'the Mcp-Name header carries an invalid Base64 sentinel value');
  if (bodyValue !== undefined && decoded !== bodyValue) {
    return mismatch(normalized, `the body carries params.${field}="${bodyValue}" but the Mcp-Name header names "${decoded}"`);
  }
  return undefined;
}

function mismatch(header: string, body: string): ModernRequestProblem {
  return { status: 400, code: HEADER_MISMATCH, message: `Bad Request: the request headers and body disagree: ${body}`, data: { mismatch: { header, body } } };
}

/** A `=?base64?...?=` value decoded as strict UTF-8; any other value as it is; undefined when the sentinel is malformed. */
function decodeSentinel(value: string): string | undefined {
  if (!(value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX))) return value;
  const encoded = value.slice(BASE64_PREFIX.length, value.length - BASE64_SUFFIX.length);
  if (!BASE64_CANONICAL.test(encoded)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(encoded, 'base64'));
  } catch {
    return undefined;
  }
}

/** Fetch's Headers joins repeated fields with ", " (what the SDK reads); Node does so for most, arrays for the rest. */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
