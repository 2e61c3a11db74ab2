import type { CallFacts } from '../config/call-facts';
import { html, type SafeHtml } from './html';

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
Free calls cost nothing of it: ${f.freeMethods.map((m) => html`<code>${m}</code> `)}the tools ${f.freeTools.map((t) => html`<code>${t}</code> `)}
and a method this server does not serve (answered <code>-32601</code>).
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
