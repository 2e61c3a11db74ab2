import { tools } from '../mcp/tools';

/** The names of the tools /mcp serves: what costs, rules and overrides may name. */
export function servedToolNames(): string[] {
  return tools.map((tool) => tool.name);
}
