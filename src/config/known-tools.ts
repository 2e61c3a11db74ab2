import type { PoliciesConfig } from '../policies/resolve-charges';
import type { ConfigProblem } from './config-error';

/**
 * Costs and rules that name a tool nobody serves: a typo that would otherwise
 * leave the real tool at 1 unit and its limit unenforced. Checked where the
 * tools are known (the composition root), since configuration loads before.
 */
export function unknownToolProblems(calls: PoliciesConfig, fromEnv: ReadonlySet<string>, toolNames: readonly string[]): ConfigProblem[] {
  const known = new Set(toolNames);
  const served = toolNames.join(', ');
  const problems: ConfigProblem[] = [];
  for (const tool of calls.costs.keys()) {
    if (known.has(tool)) continue;
    const knob = fromEnv.has(tool) ? 'RATE_LIMIT_TOOL_COSTS' : 'LIMITS_FILE';
    problems.push({
      knob,
      problem: `${knob === 'LIMITS_FILE' ? 'costs: ' : ''}no tool is named "${tool}" (tools served: ${served})`,
      fix: `name one of the tools served (${served}), or remove ${tool}`,
    });
  }
  calls.rules.forEach((rule, i) => {
    const tool = rule.match.tool;
    if (tool === undefined || known.has(tool)) return;
    problems.push({
      knob: 'LIMITS_FILE',
      problem: `rules[${i}].match.tool: no tool is named "${tool}" (tools served: ${served})`,
      fix: `name one of the tools served (${served}), or remove the rule "${rule.name}"`,
    });
  });
  return problems;
}

/**
 * The tool names costs and rules give that firelimit does not serve itself.
 * In front of an upstream (UPSTREAM_MCP_URL) they are the upstream's tools,
 * whose list is only known once it answers, so they are not a boot error.
 */
export function toolsNamedButNotServed(calls: PoliciesConfig, toolNames: readonly string[]): string[] {
  const known = new Set(toolNames);
  const named = new Set<string>(calls.costs.keys());
  for (const rule of calls.rules) if (rule.match.tool !== undefined) named.add(rule.match.tool);
  return [...named].filter((tool) => !known.has(tool)).sort();
}

/**
 * Upstream tool quotas that name one of firelimit's own tools: those are
 * served here, never forwarded, so such a quota would never apply.
 */
export function ownToolQuotaProblems(quotaTools: Iterable<string>, toolNames: readonly string[]): ConfigProblem[] {
  const own = new Set(toolNames);
  return [...quotaTools]
    .filter((tool) => own.has(tool))
    .map((tool) => ({
      knob: 'LIMITS_FILE',
      problem: `upstream.tools.${tool}: ${tool} is firelimit's own tool, served here and never forwarded upstream`,
      fix: `remove upstream.tools.${tool} (an upstream tool of that name is not served; firelimit's own takes its place)`,
    }));
}
