import { McpServer, SUPPORTED_PROTOCOL_VERSIONS, type ServerCapabilities } from '@modelcontextprotocol/server';
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

/** What the server advertises serving its own tools and resource. */
export const OWN_CAPABILITIES = { tools: { listChanged: false }, resources: { listChanged: false } } as const;

/** What it advertises in front of an upstream: the upstream's prompts and log level too. */
export const GATEWAY_CAPABILITIES = { tools: { listChanged: false }, resources: { listChanged: false }, prompts: { listChanged: false }, logging: {} } as const;

/**
 * What this service advertises, and so answers (the charge prices any other
 * method at 0): its own, or in front of an upstream the gateway's, with
 * completions only when the upstream offered them (relayed by
 * src/mcp/gateway-handlers.ts).
 */
export function capabilitiesOf(gateway: Pick<Gateway, 'offered'> | undefined): ServerCapabilities {
  if (gateway === undefined) return structuredClone(OWN_CAPABILITIES);
  return { ...structuredClone(GATEWAY_CAPABILITIES), ...(gateway.offered('completions') ? { completions: {} } : {}) };
}

export interface BuildOptions {
  /** For the shared 2026-era server: the revision it serves. Default: none (a 2025 server, or one for the SDK's entry). */
  readonly modernRevision?: string;
  /** UPSTREAM_MCP_URL set: the upstream's lists and calls beside our own. */
  readonly gateway?: Gateway;
}

/**
 * One server with every tool and the limits resource registered. Only what
 * we deliver is advertised: the tool and resource lists never change while
 * the process runs, and a stateless server has no stream to announce a change
 * on, so `listChanged` is false (the SDK would otherwise claim true).
 */
export function buildMcpServer(config: Config, tools: readonly ToolDefinition[], logger: Logger, options: BuildOptions = {}): McpServer {
  // Listing a 2026 revision is what installs server/discover and lets a connect bind the instance to that era.
  const revisions = options.modernRevision === undefined ? {} : { supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, options.modernRevision] };
  const { gateway } = options;
  if (gateway !== undefined) {
    // In front of an upstream the lists are the upstream's too; they may change, but a stateless server has no stream to say so on.
    const server = new McpServer(SERVER_INFO, {
      capabilities: capabilitiesOf(gateway),
      instructions: `${INSTRUCTIONS} The other tools are served by an upstream MCP server behind firelimit; a call of one may answer status "reserved" with a time to call again.`,
      ...revisions,
    });
    installGatewayHandlers(server, config, tools, gateway, logger);
    return server;
  }
  const server = new McpServer(SERVER_INFO, {
    capabilities: capabilitiesOf(undefined),
    instructions: INSTRUCTIONS,
    ...revisions,
  });
  registerTools(server, tools, logger);
  registerLimitsResource(server, config);
  return server;
}
