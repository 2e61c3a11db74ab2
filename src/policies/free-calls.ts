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

/** The built-in cost of a call nothing configured prices: 0 for chatter and the free tools, else 1. */
export function defaultCostOf(target: CallTarget): number {
  if (isChatter(target)) return 0;
  if (target.tool !== undefined && FREE_TOOLS.includes(target.tool)) return 0;
  return 1;
}
