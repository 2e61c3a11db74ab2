import { createMcpRefusalWriter, eraOfHeaders } from '../library/express';
import { mcpEraOf } from '../http/request-locals';

/**
 * The `refuse` writer for /mcp: the library's MCP refusal writer, with the
 * era the protocol check classified the request under when it got that far
 * (the headers alone otherwise). Its code is the era's (ADR 0023).
 */
export const writeMcpRefusal = createMcpRefusalWriter({ eraOf: (req, res) => mcpEraOf(res) ?? eraOfHeaders(req.headers) });
