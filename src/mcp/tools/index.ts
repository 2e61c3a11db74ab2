import type { ToolDefinition } from '../tool-registry';
import { rateLimitStatusTool } from './rate-limit-status';
import { whoamiTool } from './whoami';

/** Every tool /mcp serves. Adding a tool: one file in this folder, one line here. */
export const tools: readonly ToolDefinition[] = [rateLimitStatusTool, whoamiTool];
