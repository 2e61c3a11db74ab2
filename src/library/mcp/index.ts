/**
 * `firelimit/mcp`: what an MCP route needs to price a request before the
 * limiter counts it: the JSON-RPC body's messages, protocol chatter
 * (free by default), per-tool costs. Pair it with `firelimit/express`:
 * `createRateLimitMiddleware({ limiter, key, cost: (req) => price(req.body), refuse: createMcpRefusalWriter() })`.
 */
export { createJsonRpcPricing, type JsonRpcPricingOptions } from './json-rpc-pricing';
export { callTargetsOf, RESPONSE_METHOD, type CallTarget } from './call-target';
export { CHATTER_METHODS, isChatter } from './chatter';
export { MAX_CALL_COST, parseToolCosts, TOOL_NAME, type ToolCostsParse } from './tool-costs';
