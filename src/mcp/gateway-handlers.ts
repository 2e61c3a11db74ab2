import { ProtocolError, ProtocolErrorCode, type CallToolResult, type McpServer, type Tool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { anyUpstreamQuota, type Config } from '../config/config';
import type { ForwardedCall, Gateway } from '../gateway/gateway';
import { UpstreamError } from '../gateway/upstream-error';
import { OUTAGE_KINDS } from '../gateway/upstream-health';
import { RESERVATION_META_KEY } from '../gateway/reservation-id';
import { UpstreamQuotaRefusal } from '../gateway/upstream-quota-refusal';
import type { Logger } from '../shared/logger';
import { toolContextOf } from './call-context';
import { callRelayOf } from './call-relay';
import { describeLimits, LIMITS_RESOURCE_METADATA, LIMITS_RESOURCE_URI } from './resources/limits-resource';
import { listedTool, runTool, type ToolContext, type ToolDefinition } from './tool-registry';
import { quotaProtocolError, quotaToolResult } from './upstream-quota-answer';

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
  // Every quota shares UPSTREAM_GRACE_MS; the words of a reservation keep within it.
  const graceMs = config.upstream === undefined ? 0 : (anyUpstreamQuota(config.upstream)?.graceMs ?? 0);
  const clock = (): number => Date.now();
  const low = server.server;
  for (const method of GATEWAY_METHODS) low.removeRequestHandler(method);
  // Logging is advertised so the upstream's log messages can be relayed on a call's stream. A level is accepted and not kept:
  // kept on a shared server, one caller's level would be everyone's.
  low.removeRequestHandler('logging/setLevel');
  low.setRequestHandler('logging/setLevel', () => ({}));

  // The caller's token id matters only with UPSTREAM_LISTS=per-caller (the Gateway ignores it otherwise).
  const callerOf = (ctx: Parameters<typeof toolContextOf>[0]): string | undefined => toolContextOf(ctx)?.token.id;
  low.setRequestHandler('tools/list', async (_request, ctx) => ({ tools: [...ownListed, ...(await gateway.forListing('tools', callerOf(ctx))).filter((tool) => !own.has(tool.name))] }));

  low.setRequestHandler('tools/call', async (request, ctx): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    const context = toolContextOf(ctx);
    const mine = own.get(name);
    if (mine !== undefined) {
      const parsed = z.object(mine.inputSchema ?? {}).safeParse(args ?? {});
      if (!parsed.success) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid arguments for tool ${name}`);
      return runTool(mine, parsed.data, context, logger);
    }
    const tool = await upstream(() => gateway.tool(name, context?.token.id));
    if (tool === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
    if (context === undefined) return runTool(mine ?? missingContextTool(name), {}, undefined, logger);
    try {
      return answerOf(await gateway.callTool(context.token.id, tool, args, ctx.mcpReq.signal, callRelayOf(ctx), echoedReservation(request.params), context.waitBudget), tool, context, graceMs);
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

  low.setRequestHandler('resources/list', async (_request, ctx) => ({ resources: [LIMITS_RESOURCE, ...(await gateway.forListing('resources', callerOf(ctx))).filter((r) => r.uri !== LIMITS_RESOURCE_URI)] }));
  low.setRequestHandler('resources/templates/list', async (_request, ctx) => ({ resourceTemplates: [...(await gateway.forListing('templates', callerOf(ctx)))] }));
  low.setRequestHandler('resources/read', async (request, ctx) => {
    const { uri } = request.params;
    if (uri === LIMITS_RESOURCE_URI) return { contents: [{ uri, mimeType: 'application/json', text: limitsText }] };
    const context = toolContextOf(ctx);
    return upstream(() => gateway.readResource(context?.token.id ?? '', uri, ctx.mcpReq.signal, echoedReservation(request.params), context?.waitBudget), () => quotaAnswerClock(context, clock), graceMs);
  });
  // Relayed only when the upstream offered completions when firelimit booted (the server is built once, ADR 0022):
  // advertised then, by buildMcpServer; otherwise the method stays unknown (-32601).
  if (gateway.offered('completions')) {
    low.setRequestHandler('completion/complete', async (request, ctx) => {
      const context = toolContextOf(ctx);
      return upstream(() => gateway.complete(context?.token.id ?? '', request.params, ctx.mcpReq.signal, echoedReservation(request.params), context?.waitBudget), () => quotaAnswerClock(context, clock), graceMs);
    });
  }
  low.setRequestHandler('prompts/list', async (_request, ctx) => ({ prompts: [...(await gateway.forListing('prompts', callerOf(ctx)))] }));
  low.setRequestHandler('prompts/get', async (request, ctx) => {
    const context = toolContextOf(ctx);
    return upstream(() => gateway.getPrompt(context?.token.id ?? '', request.params.name, request.params.arguments, ctx.mcpReq.signal, echoedReservation(request.params), context?.waitBudget), () => quotaAnswerClock(context, clock), graceMs);
  });
}

/**
 * Upstream failures as JSON-RPC errors: what went wrong, in our words, with the upstream's code when it answered one;
 * the quota's answer to a request without a tool result as a rate-limit error with its figures.
 */
async function upstream<T>(call: () => Promise<T>, nowMs: () => number = Date.now, graceMs = 0): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof UpstreamQuotaRefusal) throw quotaProtocolError(error.answer, error.method, nowMs(), graceMs);
    if (!(error instanceof UpstreamError)) throw error;
    if (error.kind === 'protocol' && error.code !== undefined) throw new ProtocolError(error.code, error.message);
    throw new ProtocolError(ProtocolErrorCode.InternalError, `${error.message} (${error.kind})`);
  }
}

function answerOf(call: ForwardedCall, tool: Tool, context: ToolContext, graceMs: number): CallToolResult {
  return call.status === 'called' ? call.result : quotaToolResult(call, tool, context.clock(), graceMs);
}

/** The reservation id a returning call echoes in its `_meta`, unchecked (the gate parses it). */
function echoedReservation(params: { readonly _meta?: Record<string, unknown> }): unknown {
  return params._meta?.[RESERVATION_META_KEY];
}

function quotaAnswerClock(context: ToolContext | undefined, fallback: () => number): number {
  return context?.clock() ?? fallback();
}

function missingContextTool(name: string): ToolDefinition {
  return { name, title: name, description: '', outputSchema: {}, run: () => ({ text: '', structured: {} }) };
}
