/**
 * MCP tool names as the specification allows them (1-128 of A-Z a-z 0-9 _ - .),
 * so a cost or a rule can name any tool a server may serve.
 */
export const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** The most one call may cost: far above any window a tier publishes, yet an exact integer in every store. */
export const MAX_CALL_COST = 1_000_000;

export type ToolCostsParse = { readonly ok: true; readonly costs: ReadonlyMap<string, number> } | { readonly ok: false; readonly problem: string };

/** "search=5,whoami=1" → costs by tool; each entry checked, a tool named twice refused. */
export function parseToolCosts(text: string): ToolCostsParse {
  const costs = new Map<string, number>();
  for (const part of text.split(',').map((x) => x.trim()).filter(Boolean)) {
    const match = /^([^=\s]+)=(\d{1,7})$/.exec(part);
    const cost = match === null ? Number.NaN : Number(match[2]);
    if (match === null || !TOOL_NAME.test(match[1] as string) || cost > MAX_CALL_COST) {
      return { ok: false, problem: `"${part}" is not tool=cost (a tool name of A-Z a-z 0-9 _ - ., a whole cost from 0 to ${MAX_CALL_COST})` };
    }
    const tool = match[1] as string;
    if (costs.has(tool)) return { ok: false, problem: `${tool} is given a cost twice` };
    costs.set(tool, cost);
  }
  return { ok: true, costs };
}
