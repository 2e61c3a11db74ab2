import { callTargetsOf, type CallTarget } from './call-target';
import { isChatter } from './chatter';
import { MAX_CALL_COST, TOOL_NAME } from './tool-costs';

export interface JsonRpcPricingOptions {
  /** What one `tools/call` of a tool costs, by tool name; a tool not listed costs `defaultCost`. */
  readonly toolCosts?: ReadonlyMap<string, number> | Readonly<Record<string, number>>;
  /** Every other request (and a tool not in `toolCosts`). Default 1. */
  readonly defaultCost?: number;
  /**
   * Protocol chatter: initialize, ping, the lists, notifications and a
   * client's responses (CHATTER_METHODS). Default 0, so a client that
   * reconnects per task does not spend its budget on handshakes.
   */
  readonly chatterCost?: number;
}

/**
 * The price of a parsed JSON-RPC body, for `cost` of createRateLimitMiddleware:
 * the sum over its messages (a batch pays for each), chatter at
 * `chatterCost`, `tools/call` by its tool. Costs are whole numbers from 0 to
 * MAX_CALL_COST; a bad table is refused here, at startup, not per request.
 */
export function createJsonRpcPricing(options: JsonRpcPricingOptions = {}): (body: unknown) => number {
  const defaultCost = checkedCost('defaultCost', options.defaultCost ?? 1);
  const chatterCost = checkedCost('chatterCost', options.chatterCost ?? 0);
  const entries = options.toolCosts instanceof Map ? [...options.toolCosts] : Object.entries(options.toolCosts ?? {});
  const toolCosts = new Map<string, number>();
  for (const [tool, cost] of entries) {
    if (!TOOL_NAME.test(tool)) throw new RangeError(`createJsonRpcPricing: "${tool}" is not an MCP tool name (1-128 of A-Z a-z 0-9 _ - .)`);
    toolCosts.set(tool, checkedCost(`toolCosts.${tool}`, cost));
  }
  const priceOf = (target: CallTarget): number => {
    if (isChatter(target)) return chatterCost;
    if (target.tool !== undefined) return toolCosts.get(target.tool) ?? defaultCost;
    return defaultCost;
  };
  return (body) => Math.min(MAX_CALL_COST, callTargetsOf(body).reduce((sum, target) => sum + priceOf(target), 0));
}

function checkedCost(name: string, cost: number): number {
  if (!Number.isSafeInteger(cost) || cost < 0 || cost > MAX_CALL_COST) throw new RangeError(`createJsonRpcPricing: ${name} must be a whole number from 0 to ${MAX_CALL_COST}, got ${cost}`);
  return cost;
}
