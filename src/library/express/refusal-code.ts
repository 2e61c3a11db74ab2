import type { IncomingHttpHeaders } from 'node:http';
import { JsonRpcCode } from './json-rpc-error';

/**
 * The JSON-RPC codes of our own refusals in the 2026-07-28 era. That
 * revision reserves -32020..-32099 for codes the specification defines
 * (implementations MUST NOT emit others there) and asks new codes to sit
 * outside JSON-RPC's -32768..-32000; so the HTTP status the refusal already
 * carries: 429 and 503. The 2025 eras keep -32029 and -32053, which clients
 * written against us read (ADR 0023).
 */
export const ModernRefusalCode = {
  RateLimited: 429,
  BackendUnavailable: 503,
} as const;

/** The MCP revision family a request speaks: 2026-07-28 and later, or the 2025 eras. */
export type McpEra = 'modern' | 'legacy';

export type RefusalKind = 'rate_limited' | 'backend_unavailable';

/** The code of a rate-limit (or store-down) refusal in the request's era. */
export function refusalCode(era: McpEra, kind: RefusalKind): number {
  if (era === 'modern') return kind === 'rate_limited' ? ModernRefusalCode.RateLimited : ModernRefusalCode.BackendUnavailable;
  return kind === 'rate_limited' ? JsonRpcCode.RateLimited : JsonRpcCode.BackendUnavailable;
}

/**
 * The era a request speaks, from its headers alone, for refusals made before
 * the body is read (sign-in budgets, the refused-request budget): a 2026-07-28
 * request must carry `MCP-Protocol-Version` naming its revision (or a later
 * one); anything else is answered as 2025.
 */
export function eraOfHeaders(headers: IncomingHttpHeaders): McpEra {
  const raw = headers['mcp-protocol-version'];
  const version = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  return version !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= '2026-07-28' ? 'modern' : 'legacy';
}
