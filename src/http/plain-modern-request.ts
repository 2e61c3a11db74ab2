import type { IncomingHttpHeaders } from 'node:http';
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, LOG_LEVEL_META_KEY, PROTOCOL_VERSION_META_KEY, type InboundModernRoute, type JSONRPCRequest } from '@modelcontextprotocol/server';
import { stripOws } from './header-ows';
import { isJsonRpcRequest } from './json-rpc-shape';

/** The first 2026-era revision: the SDK's classifier compares revisions as strings against it. */
const FIRST_MODERN_REVISION = '2026-07-28';

/** The client capabilities the 2026 envelope's schema checks; any other key passes it unread. */
const CHECKED_CAPABILITIES = ['experimental', 'sampling', 'elicitation', 'roots', 'extensions'] as const;

/** The client-info keys decided here (name, version, title: strings); any other goes to the SDK's schema. */
const PLAIN_CLIENT_INFO_KEYS: ReadonlySet<string> = new Set(['name', 'version', 'title']);

/**
 * The SDK classifier's answer for the ordinary 2026-07-28 request, decided
 * without its zod parses: one JSON-RPC request (not `initialize`, no
 * `result` or `error` member), a `_meta` envelope naming a 2026-era revision
 * whose client info is a name, a version and at most a title, whose client
 * capabilities are an object declaring none of the capabilities the
 * envelope's schema checks, with no progress token and no log level; the
 * `MCP-Protocol-Version` and `Mcp-Method` headers present, without
 * surrounding whitespace, and equal to the envelope's revision and the
 * body's method. That is the request every plain 2026 client sends; the SDK
 * routes it to the modern era (`classifyRequestBody`'s envelope case) with
 * this route. Anything else is `undefined`, for the classifier to decide.
 * Pinned against it by test/unit/mcp-protocol-check-fast.test.ts.
 */
export function plainModernRoute(headers: IncomingHttpHeaders, body: unknown): InboundModernRoute | undefined {
  if (!isJsonRpcRequest(body)) return undefined;
  const request = body as JSONRPCRequest & { result?: unknown; error?: unknown };
  // The classifier asks "a response?" first; a request carrying either member is left to it.
  if (Object.hasOwn(request, 'result') || Object.hasOwn(request, 'error')) return undefined;
  const { method } = request;
  if (method === 'initialize') return undefined;
  const meta = objectOrUndefined(objectOrUndefined(request.params)?._meta);
  if (meta === undefined) return undefined;
  const revision = meta[PROTOCOL_VERSION_META_KEY];
  if (typeof revision !== 'string' || revision < FIRST_MODERN_REVISION) return undefined;
  if (headers['mcp-protocol-version'] !== revision || headers['mcp-method'] !== method) return undefined;
  // The classifier strips a header's spaces and tabs before comparing it with the body's value,
  // so a revision or method that carries them at either end disagrees with its own header there.
  if (stripOws(revision) !== revision || stripOws(method) !== method) return undefined;
  if (Object.hasOwn(meta, 'progressToken') || Object.hasOwn(meta, LOG_LEVEL_META_KEY)) return undefined;
  if (!plainClientInfo(meta[CLIENT_INFO_META_KEY]) || !plainCapabilities(meta[CLIENT_CAPABILITIES_META_KEY])) return undefined;
  return { kind: 'modern', messageKind: 'request', message: request, classification: { era: 'modern', revision } };
}

function objectOrUndefined(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** Absent, or an object of string name and version and an optional string title, nothing else. */
function plainClientInfo(value: unknown): boolean {
  if (value === undefined) return true;
  const info = objectOrUndefined(value);
  if (info === undefined || typeof info.name !== 'string' || typeof info.version !== 'string') return false;
  if (info.title !== undefined && typeof info.title !== 'string') return false;
  for (const key in info) if (Object.hasOwn(info, key) && !PLAIN_CLIENT_INFO_KEYS.has(key)) return false;
  return true;
}

/** An object (required by the envelope) that declares none of the capabilities the envelope's schema looks into. */
function plainCapabilities(value: unknown): boolean {
  const capabilities = objectOrUndefined(value);
  if (capabilities === undefined) return false;
  for (const key of CHECKED_CAPABILITIES) if (capabilities[key] !== undefined) return false;
  return true;
}
