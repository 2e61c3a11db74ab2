import type { Config } from '../config/config';
import { describePolicy, type PolicyDescription } from '../limiter/describe-policy';
import { CHATTER_METHODS, FREE_TOOLS } from '../policies/free-calls';
import type { PolicyRule } from '../policies/policy-rule';
import { html, type SafeHtml } from './html';

/** What calls cost and the rules on top of the tiers, from the configuration the charge middleware uses. */
export interface CallFacts {
  readonly freeMethods: readonly string[];
  readonly freeTools: readonly string[];
  readonly free: PolicyDescription;
  readonly costs: readonly (readonly [tool: string, cost: number])[];
  readonly rules: readonly RuleFact[];
}

export interface RuleFact {
  readonly name: string;
  readonly matches: string;
  readonly cost?: number;
  readonly limits: readonly PolicyDescription[];
  readonly shadow: boolean;
}

export function callFacts(config: Config): CallFacts {
  const { calls } = config.rateLimit;
  const configuredFree = [...calls.costs].filter(([, cost]) => cost === 0).map(([tool]) => tool);
  return {
    freeMethods: CHATTER_METHODS,
    freeTools: [...new Set([...FREE_TOOLS.filter((tool) => calls.costs.get(tool) === undefined || calls.costs.get(tool) === 0), ...configuredFree])],
    free: describePolicy(calls.free[0]),
    costs: [...calls.costs].filter(([, cost]) => cost > 0).sort(([a], [b]) => a.localeCompare(b)),
    rules: calls.rules.map(ruleFact),
  };
}

function ruleFact(rule: PolicyRule): RuleFact {
  const { method, tool, tier, tokenId } = rule.match;
  const parts = [tool !== undefined ? `calls of ${tool}` : method !== undefined ? method : 'every call', tier !== undefined ? `tier ${tier}` : '', tokenId !== undefined ? `token ${tokenId}` : ''].filter(Boolean);
  return {
    name: rule.name,
    matches: parts.join(', '),
    ...(rule.cost !== undefined ? { cost: rule.cost } : {}),
    limits: (rule.limits ?? []).map(describePolicy),
    shadow: rule.shadow,
  };
}

export function costsSection(f: CallFacts): SafeHtml {
  const costRows = f.costs.map(([tool, cost]) => html`<tr><td><code>${tool}</code></td><td class="num" data-figure="cost-${tool}">${cost}</td></tr>`);
  const ruleRows = f.rules.map(
    (r) => html`<tr><td><code>${r.name}</code>${r.shadow ? ' (shadow: reported, not enforced)' : ''}</td><td>${r.matches}</td>
<td class="num" data-figure="rule-cost-${r.name}">${r.cost ?? '-'}</td>
<td>${r.limits.length === 0 ? '-' : r.limits.map((p) => html`<span data-figure="rule-limit-${r.name}-${p.name}">${p.words}</span> `)}</td></tr>`,
  );
  return html`<section aria-labelledby="costs">
<h2 id="costs">What a call costs</h2>
<p>Each JSON-RPC message costs one unit of your tier's limit unless listed here; a batch costs the sum of its messages.
Free calls cost nothing of it: ${f.freeMethods.map((m) => html`<code>${m}</code> `)}and the tools ${f.freeTools.map((t) => html`<code>${t}</code> `)}.
They have their own limit, so reconnecting never spends your budget: ${figure('free-limit', f.free.limit)} free calls per token per ${f.free.windowSeconds} s.</p>
${costRows.length === 0 ? html`<p>Every other tool costs 1.</p>` : html`<div class="table-wrap"><table><caption class="lede">Tools that cost more than 1</caption>
<thead><tr><th scope="col">Tool</th><th scope="col">Units per call</th></tr></thead><tbody>${costRows}</tbody></table></div>`}
${ruleRows.length === 0 ? html`` : html`<div class="table-wrap"><table><caption class="lede">Rules on top of your tier (limits count calls, per token)</caption>
<thead><tr><th scope="col">Rule</th><th scope="col">Applies to</th><th scope="col">Units per call</th><th scope="col">Extra limits</th></tr></thead><tbody>${ruleRows}</tbody></table></div>`}
<p>Operators may also change a limit at runtime; <code>rate_limit_status</code> always lists the limits that hold you now, with what is left in each.</p>
</section>`;
}

function figure(name: string, value: string | number): SafeHtml {
  return html`<strong data-figure="${name}">${value}</strong>`;
}
