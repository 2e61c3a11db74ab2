import { RESPONSE_METHOD, type CallTarget } from './call-target';

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

export function isChatter(target: CallTarget): boolean {
  return target.method === RESPONSE_METHOD || target.method.startsWith('notifications/') || CHATTER_METHODS.includes(target.method);
}
