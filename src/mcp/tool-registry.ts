import type { CallToolResult, McpServer, Tool, ToolAnnotations } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ScopeBudget } from '../http/caller-budgets';
import type { Decision, RateLimiter, WaitBudget } from '../library';
import type { Tier } from '../config/tier';
import { describeError } from '../shared/describe-error';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken } from '../tokens/token-record';
import { toolContextOf } from './call-context';

/** What every tool call sees: who is calling, and this request's (already counted) decision. */
export interface ToolContext {
  readonly token: AuthenticatedToken;
  /** The decision made for this very HTTP request; tools read it rather than spend another unit. */
  readonly decision: Decision;
  readonly limiter: RateLimiter;
  /** The caller's tier, whose policies `decision` was made under. */
  readonly tier: Tier;
  readonly clock: () => number;
  /** The caller's budget in every scope that holds it (tier or override, free calls, rules); absent: only `decision` is known. */
  readonly budgets?: () => Promise<readonly ScopeBudget[]>;
  /** What is left of the request's wait for its shared stores (docs/adr/0047), for the upstream quota of a forwarded call. */
  readonly waitBudget?: WaitBudget;
}

/** A tool answers twice: text for a model or a person, structured data matching its outputSchema for programs. */
export interface ToolOutput<Out> {
  readonly text: string;
  readonly structured: Out;
}

export interface ToolDefinition<In extends z.ZodRawShape = z.ZodRawShape, Out extends z.ZodRawShape = z.ZodRawShape> {
  /** snake_case, unique; what clients call. */
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** Default: no arguments. */
  readonly inputSchema?: In;
  readonly outputSchema: Out;
  readonly annotations?: ToolAnnotations;
  run(args: z.output<z.ZodObject<In>>, context: ToolContext): ToolOutput<z.output<z.ZodObject<Out>>> | Promise<ToolOutput<z.output<z.ZodObject<Out>>>>;
}

/** Keeps a tool's argument and output types tied to its schemas at the definition site. */
export function defineTool<In extends z.ZodRawShape = Record<string, never>, Out extends z.ZodRawShape = z.ZodRawShape>(
  tool: ToolDefinition<In, Out>,
): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

/**
 * Registers each tool once, on a server that answers many requests: the
 * schemas are wrapped and converted here, at build time, and each call finds
 * its own token and decision in the request's context (./call-context).
 */
export function registerTools(server: McpServer, tools: readonly ToolDefinition[], logger: Logger): void {
  const names = new Set<string>();
  for (const tool of tools) {
    if (names.has(tool.name)) throw new Error(`tool registry: "${tool.name}" is registered twice`);
    names.add(tool.name);
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        // Always an object schema, so `run` always gets args (`{}` when the client sends none).
        inputSchema: z.object(tool.inputSchema ?? {}),
        outputSchema: z.object(tool.outputSchema),
        annotations: tool.annotations,
      },
      async (args, handlerContext): Promise<CallToolResult> => runTool(tool, args, toolContextOf(handlerContext), logger),
    );
  }
}

/** One call of one of firelimit's own tools, its errors worded for the caller and logged by class only. */
export async function runTool(tool: ToolDefinition, args: unknown, context: ToolContext | undefined, logger: Logger): Promise<CallToolResult> {
  if (context === undefined) {
    // A wiring mistake (a request that reached the server without its context): never answer as nobody.
    logger.error('MCP tool called without a request context', { event: 'mcp.tool_error', tool: tool.name, error: 'missing_context' });
    return { isError: true, content: [{ type: 'text', text: `The ${tool.name} tool failed; try again later.` }] };
  }
  try {
    const output = await tool.run(args as never, context);
    return { content: [{ type: 'text', text: output.text }], structuredContent: output.structured as Record<string, unknown> };
  } catch (error) {
    // A tool's own error text may carry internals; the caller gets a generic one, the log gets the class.
    logger.error('MCP tool failed', { event: 'mcp.tool_error', tool: tool.name, tokenId: context.token.id, error: describeError(error) });
    return { isError: true, content: [{ type: 'text', text: `The ${tool.name} tool failed; try again later.` }] };
  }
}

/** How a tools/list names one of firelimit's own tools when the list is assembled by hand (the gateway's). */
export function listedTool(tool: ToolDefinition): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: z.toJSONSchema(z.object(tool.inputSchema ?? {}), { io: 'input' }) as Tool['inputSchema'],
    outputSchema: z.toJSONSchema(z.object(tool.outputSchema), { io: 'output' }) as Tool['outputSchema'],
    annotations: tool.annotations,
  };
}
