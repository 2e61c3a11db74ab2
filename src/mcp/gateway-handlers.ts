import { ProtocolError, ProtocolErrorCode, type CallToolResult, type McpServer, type Tool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Config } from '../config/config';
import type { ForwardedCall, Gateway } from '../gateway/gateway';
import { UpstreamError } from '../gateway/upstream-error';
import { OUTAGE_KINDS } from '../gateway/upstream-health';
import { SHARED_QUOTA_NAME } from '../gateway/upstream-quota-gate';
import type { UpstreamRejection } from '../limiter/upstream/upstream-schedule';
import type { Logger } from '../shared/logger';
import { toolContextOf } from './call-context';
import { callRelayOf } from './call-relay';
import { describeLimits, LIMITS_RESOURCE_METADATA, LIMITS_RESOURCE_URI } from './resources/limits-resource';
import { listedTool, runTool, type ToolContext, type ToolDefinition } from './tool-registry';

/** The handlers replaced when firelimit fronts an upstream: every list and read answers both servers' items. */
const GATEWAY_METHODS = ['tools/list', 'tools/call', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/list', 'prompts/get'] as const;

const LIMITS_RESOURCE = { uri: LIMITS_RESOURCE_URI, name: 'limits', ...LIMITS_RESOURCE_METADATA };

/**
 * Gateway mode (docs/adr/0034-gateway-forwarding.md): the upstream's tools,
 * resources and prompts are answered as the upstream lists them (raw JSON
 * Schemas, unchanged), so they are served by low-level handlers rather than
 * registered through McpServer, which would rebuild their schemas. firelimit's
 * own tools and limits resource are listed first; an upstream tool with the
 * same name as one of ours is not served (ours decide how limits are read).
 */
export function installGatewayHandlers(server: McpServer, config: Config, tools: readonly ToolDefinition[], gateway: Gateway, logger: Logger): void {
  const own = new Map(tools.map((tool) => [tool.name, tool]));
  const ownListed = tools.map(listedTool);
  const limitsText = JSON.stringify(describeLimits(config), null, 2);
  const low = server.server;
  for (const method of GATEWAY_METHODS) low.removeRequestHandler(method);
  // Logging is advertised so the upstream's log messages can be relayed on a call's stream. A level is accepted and not kept:
  // kept on a shared server, one caller's level would be everyone's.
  low.removeRequestHandler('logging/setLevel');
  low.setRequestHandler('logging/setLevel', () => ({}));

  low.setRequestHandler('tools/list', async () => ({ tools: [...ownListed, ...(await gateway.forListing('tools')).filter((tool) => !own.has(tool.name))] }));

  low.setRequestHandler('tools/call', async (request, ctx): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    const context = toolContextOf(ctx);
    const mine = own.get(name);
    if (mine !== undefined) {
      const parsed = z.object(mine.inputSchema ?? {}).safeParse(args ?? {});
      if (!parsed.success) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid arguments for tool ${name}`);
      return runTool(mine, parsed.data, context, logger);
    }
    const tool = await upstream(() => gateway.tool(name));
    if (tool === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
    if (context === undefined) return runTool(mine ?? missingContextTool(name), {}, undefined, logger);
    try {
      return answerOf(await gateway.callTool(context.token.id, tool, args, ctx.mcpReq.signal, callRelayOf(ctx)), tool, context);
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      // A tool the model can see failed: it reads the words and may try again; the upstream's own text is never passed on.
      // An upstream that cannot be reached or used is warned of once per outage (gateway.upstream_down), not per call.
      const log = OUTAGE_KINDS.has(error.kind) ? logger.debug : logger.warn;
      log.call(logger, 'upstream tools/call failed', { event: 'gateway.call_failed', tool: name, tokenId: context.token.id, kind: error.kind, code: error.code });
      if (error.kind === 'protocol' && error.code !== undefined) throw new ProtocolError(error.code, error.message);
      return { isError: true, content: [{ type: 'text', text: `The ${name} tool could not run: ${error.message}. Try again later.` }] };
    }
  });

  low.setRequestHandler('resources/list', async () => ({ resources: [LIMITS_RESOURCE, ...(await gateway.forListing('resources')).filter((r) => r.uri !== LIMITS_RESOURCE_URI)] }));
  low.setRequestHandler('resources/templates/list', async () => ({ resourceTemplates: [...(await gateway.forListing('templates'))] }));
  low.setRequestHandler('resources/read', async (request, ctx) => {
    const { uri } = request.params;
    if (uri === LIMITS_RESOURCE_URI) return { contents: [{ uri, mimeType: 'application/json', text: limitsText }] };
    const context = toolContextOf(ctx);
    return upstream(() => gateway.readResource(context?.token.id ?? '', uri, ctx.mcpReq.signal));
  });
  // Relayed only when the upstream offered completions when firelimit booted (the server is built once, ADR 0022):
  // advertised then, by buildMcpServer; otherwise the method stays unknown (-32601).
  if (gateway.offered('completions')) {
    low.setRequestHandler('completion/complete', async (request, ctx) => {
      const context = toolContextOf(ctx);
      return upstream(() => gateway.complete(context?.token.id ?? '', request.params, ctx.mcpReq.signal));
    });
  }
  low.setRequestHandler('prompts/list', async () => ({ prompts: [...(await gateway.forListing('prompts'))] }));
  low.setRequestHandler('prompts/get', async (request, ctx) => {
    const context = toolContextOf(ctx);
    return upstream(() => gateway.getPrompt(context?.token.id ?? '', request.params.name, request.params.arguments, ctx.mcpReq.signal));
  });
}

/** Upstream failures as JSON-RPC errors: what went wrong, in our words, with the upstream's code when it answered one. */
async function upstream<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    if (error.kind === 'protocol' && error.code !== undefined) throw new ProtocolError(error.code, error.message);
    throw new ProtocolError(ProtocolErrorCode.InternalError, `${error.message} (${error.kind})`);
  }
}

const REJECTION_WORDS: Readonly<Record<UpstreamRejection, string>> = {
  daily_budget: "today's upstream budget is spent",
  max_wait: 'every slot within the longest wait is taken',
  reservations_full: 'too many callers are already waiting',
  unavailable: 'the quota cannot be checked while its database is unreachable',
};

function answerOf(call: ForwardedCall, tool: Tool, context: ToolContext): CallToolResult {
  if (call.status === 'called') return call.result;
  if (call.status === 'cancelled') {
    // Nobody reads this: the caller went away while held, and nothing was forwarded.
    return { isError: true, content: [{ type: 'text', text: `The ${tool.name} call was cancelled while it waited for its upstream slot; it did not run.` }] };
  }
  const nowMs = context.clock();
  const seconds = Math.max(1, Math.ceil(call.retryAfterMs / 1000));
  const which = call.quota === SHARED_QUOTA_NAME ? `The upstream behind ${tool.name} is at its shared rate limit` : `The ${tool.name} tool is at its own upstream rate limit`;
  if (call.status === 'reserved') {
    return {
      isError: true,
      content: [{
        type: 'text',
        text: `${which}. A slot is reserved for you at ${new Date(call.slotAtMs).toISOString()}: ` +
          `call ${tool.name} again in ${seconds} s (not earlier) with the same arguments and it will run. The reservation lapses if you come back much later.`,
      }],
      structuredContent: { status: 'reserved', retryAfterMs: call.retryAfterMs, slotAtMs: call.slotAtMs, quota: call.quota },
    };
  }
  const why = REJECTION_WORDS[call.reason];
  const whose = call.quota === SHARED_QUOTA_NAME ? `The upstream behind ${tool.name}` : `The ${tool.name} tool's own upstream quota`;
  return {
    isError: true,
    content: [{ type: 'text', text: `${whose} cannot take this call: ${why}. Try again in ${seconds} s.` }],
    structuredContent: { status: 'rejected', reason: call.reason, retryAfterMs: call.retryAfterMs, retryAtMs: nowMs + call.retryAfterMs, quota: call.quota },
  };
}

function missingContextTool(name: string): ToolDefinition {
  return { name, title: name, description: '', outputSchema: {}, run: () => ({ text: '', structured: {} }) };
}
