import { McpServer } from '@modelcontextprotocol/server';
import type { Config } from '../config/config';
import type { Gateway } from '../gateway/gateway';
import { installGatewayHandlers } from './gateway-handlers';
import type { Logger } from '../shared/logger';
import { registerLimitsResource } from './resources/limits-resource';
import { registerTools, type ToolDefinition } from './tool-registry';

export const SERVER_INFO = { name: 'firelimit', version: '0.1.0' } as const;

const INSTRUCTIONS =
  'firelimit enforces a per-token rate limit shared by every instance. Call rate_limit_status to see your limit, ' +
  'what is left and when it resets; on HTTP 429 wait Retry-After seconds before trying again.';

/**
 * One server with every tool and the limits resource registered. Only what
 * we deliver is advertised: the tool and resource lists never change while
 * the process runs, and a stateless server has no stream to announce a change
 * on, so `listChanged` is false (the SDK would otherwise claim true).
 */
export function buildMcpServer(config: Config, tools: readonly ToolDefinition[], logger: Logger, gateway?: Gateway): McpServer {
  if (gateway !== undefined) {
    // In front of an upstream the lists are the upstream's too; they may change, but a stateless server has no stream to say so on.
    const server = new McpServer(SERVER_INFO, {
      capabilities: { tools: { listChanged: false }, resources: { listChanged: false }, prompts: { listChanged: false } },
      instructions: `${INSTRUCTIONS} The other tools are served by an upstream MCP server behind firelimit; a call of one may answer status "reserved" with a time to call again.`,
    });
    installGatewayHandlers(server, config, tools, gateway, logger);
    return server;
  }
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
    instructions: INSTRUCTIONS,
  });
  registerTools(server, tools, logger);
  registerLimitsResource(server, config);
  return server;
}
