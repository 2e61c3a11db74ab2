/**
 * `firelimit/express`: the limiter in front of Express routes. The middleware
 * sets the rate-limit headers on every answer and refuses with 429 and
 * Retry-After (503 when a fail-closed store is down); an MCP route passes
 * the JSON-RPC refusal writer. Express is a peer dependency.
 */
export { createRateLimitMiddleware, type RateLimitMiddlewareOptions, type RefusalWriter } from './rate-limit-middleware';
export { setRateLimitHeaders, secondsUntil, type HeaderTarget } from './rate-limit-headers';
export { refusalBody, refusalStatus, writeJsonRefusal } from './refusal-body';
export { createMcpRefusalWriter, type McpRefusalWriterOptions } from './mcp-refusal-writer';
export { eraOfHeaders, ModernRefusalCode, refusalCode, type McpEra, type RefusalKind } from './refusal-code';
export { JsonRpcCode, jsonRpcError, requestIdOf, sendJsonRpcError, type JsonRpcErrorBody, type JsonRpcId } from './json-rpc-error';
export { publishedLimit, publishedLimitWords, type PublishedLimit } from './published-limit';
