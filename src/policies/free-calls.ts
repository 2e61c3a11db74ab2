import type { CallTarget } from './call-target';
import { RESPONSE_METHOD } from './call-target';

/**
 * Protocol chatter: what an MCP client sends to connect and look around
 * (a handshake is initialize, notifications/initialized and tools/list), not
 * work. It costs 0 of the token's limit by default, so a client that
 * reconnects per task does not spend its budget on handshakes; the free
 * limit (FREE_PER_MINUTE_DEFAULT) still holds it.
 */
export const CHATTER_METHODS: readonly string[] = [
  'initialize',
  // The 2026-07-28 handshake, priced as the 2025 one: a client pinned to that revision must not lose it to a spent budget.
  'server/discover',
  // Sent by clients at connect time (the SDK 2.x does when the server offers logging).
  'logging/setLevel',
  'ping',
  'tools/list',
  'resources/list',
  'resources/templates/list',
  'prompts/list',
  'notifications/*',
];

/** Tools that cost 0 unless configured otherwise: reading your own budget must not spend it. */
export const FREE_TOOLS: readonly string[] = ['rate_limit_status'];

/**
 * Free calls per token per minute by default: 600, five times the default
 * tier's 120, i.e. 200 handshakes a minute, far above any honest client's
 * reconnects, yet a flood of pings stops at 10 a second per token.
 */
export const FREE_PER_MINUTE_DEFAULT = 600;

export function isChatter(target: CallTarget): boolean {
  return target.method === RESPONSE_METHOD || target.method.startsWith('notifications/') || CHATTER_METHODS.includes(target.method);
}

/**
 * The built-in cost of a call nothing configured prices: 0 for chatter, the
 * free tools and a method this service does not serve (`servedMethods`
 * given and without it: the answer is -32601, no work), else 1. A cost of 0
 * still spends one of the free limit, so none of them is unbounded.
 */
export function defaultCostOf(target: CallTarget, servedMethods?: ReadonlySet<string>): number {
  if (isChatter(target)) return 0;
  if (servedMethods !== undefined && !servedMethods.has(target.method)) return 0;
  if (target.tool !== undefined && FREE_TOOLS.includes(target.tool)) return 0;
  return 1;
}
