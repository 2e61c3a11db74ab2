import { anyUpstreamQuota, upstreamIntervalMs, type Config, type UpstreamConfig } from '../config/config';
import { defaultCostOf } from '../policies/free-calls';
import { reservationsPerTokenOf } from '../config/upstream-config';
import { FORWARDED_METHODS, NO_UPSTREAM_COSTS, sharedUpstreamCostOf } from '../config/upstream-costs';
import { INSPECTOR_OBSERVED } from './developers-clients';
import { html, type SafeHtml } from './html';

const UNIT_WORDS: Readonly<Record<number, string>> = { 1000: 'second', 60_000: 'minute', 3_600_000: 'hour', 86_400_000: 'day' };

function rateWords(limit: number, windowMs: number): string {
  return `${limit} per ${UNIT_WORDS[windowMs] ?? `${windowMs / 1000} s`}`;
}

function toolQuotaRows(upstream: UpstreamConfig): SafeHtml {
  const rows = [...upstream.toolQuotas].sort(([a], [b]) => a.localeCompare(b)).map(([tool, q]) => html`<tr><td><code>${tool}</code></td>
<td data-figure="tool-quota-rate-${tool}">${rateWords(q.limit, q.windowMs)}</td><td>${Math.round(q.headroom * 100)}%</td>
<td data-figure="tool-quota-interval-ms-${tool}">${upstreamIntervalMs(q)}</td><td>${Math.round(q.maxWaitMs / 1000)} s</td><td>${q.dailyBudget ?? 'none'}</td></tr>`);
  return html`<div class="table-wrap"><table><caption class="lede">Tools with an upstream quota of their own (every token together)</caption>
<thead><tr><th scope="col">Tool</th><th scope="col">Upstream allows</th><th scope="col">Used</th><th scope="col">At most one call every (ms)</th><th scope="col">Longest wait</th><th scope="col">Calls a day (UTC)</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

/**
 * What an integrator must know when firelimit fronts an upstream MCP server:
 * the upstream's tools are behind quotas every token shares (the service's,
 * and some tools' own), and what a "reserved" or "rejected" answer asks them
 * (or their model) to do. Only rendered with UPSTREAM_MCP_URL; every figure
 * is the configured one.
 */
export function upstreamSection(config: Config, listed: readonly UpstreamToolFact[] | undefined): SafeHtml {
  const upstream = config.upstream;
  if (upstream === undefined) return html``;
  const relayed = html`${upstreamToolRows(config, listed)}
<p id="upstream-isolation">If the upstream server keeps sessions, your calls reach it in a session of your token's own: what
another token does in its session (a resource it created, a setting it changed) is not visible to you, nor yours to it. ${
    upstream.lists === 'per-caller'
      ? "The tool, resource and prompt lists you get are your token's own, fetched in your session."
      : 'The tool, resource and prompt lists are the same for every token.'
  }</p>
${whileItRuns(upstream)}`;
  const q = upstream.quota;
  const anyQuota = anyUpstreamQuota(upstream);
  if (anyQuota === undefined) {
    return html`<section aria-labelledby="upstream">
<h2 id="upstream">Tools served by the upstream server</h2>
<p>Besides <code>rate_limit_status</code> and <code>whoami</code>, the tools, resources and prompts listed are those of an
MCP server behind this service. Your calls to them count against your token's limit like any other call. If that server
is down or slower than ${upstream.timeoutMs} ms, the call answers a tool error saying so; try again later.</p>
${relayed}
</section>`;
  }
  const shared =
    q === undefined
      ? html`<p>Besides <code>rate_limit_status</code> and <code>whoami</code>, the tools listed are served by an upstream MCP
server. The tools below reach services with quotas of their own, which every token shares:</p>`
      : html`<p>Besides <code>rate_limit_status</code> and <code>whoami</code>, the tools listed are served by an upstream MCP server
that allows <strong data-figure="upstream-rate">${rateWords(q.limit, q.windowMs)}</strong> for the whole service, every
token together. This service uses ${Math.round(q.headroom * 100)}% of it: one upstream call every
<strong data-figure="upstream-interval-ms">${upstreamIntervalMs(q)}</strong> ms at most, ${config.rateLimit.backend === 'memory' ? html`<strong data-figure="upstream-quota-scope">on each instance</strong> (this deployment keeps the quota in each instance's memory, so N instances can send N times that)` : config.rateLimit.backend === 'sqlite' ? html`<strong data-figure="upstream-quota-scope">across every process on this host</strong> (this deployment keeps the quota in one SQLite file, so N hosts can send N times that)` : html`<span data-figure="upstream-quota-scope">across every instance</span>`}${q.dailyBudget === undefined ? '' : html`, and at most <strong data-figure="upstream-daily-budget">${q.dailyBudget}</strong> a day (UTC)`}.</p>
${countedMethods(upstream)}
${upstream.toolQuotas.size === 0 ? '' : html`<p>Some tools reach services with quotas of their own. A call to one of them needs a slot on its own quota and on the shared one:</p>`}`;
  return html`<section aria-labelledby="upstream">
<h2 id="upstream">${q === undefined ? 'Upstream quotas' : 'The shared upstream quota'}</h2>
${shared}
${upstream.toolQuotas.size === 0 ? '' : toolQuotaRows(upstream)}
<p>When your call's turn is at most ${anyQuota.holdMs} ms away it simply waits and runs. Otherwise the call returns at once with a
normal tool result marked <code>isError: true</code>; its <code>quota</code> field says which quota answered
(<code>"upstream"</code> for the shared one, or the tool's name for its own):</p>
<ul>
<li><code>structuredContent: { "status": "reserved", "retryAfterMs": …, "slotAtMs": …, "quota": …, "reservation": … }</code>: a slot
is kept for this call at <code>slotAtMs</code> (epoch ms); each call that must wait gets a slot of its own. Call the same tool
again with the same arguments at or after that time, and within ${anyQuota.graceMs} ms of it: it runs without queueing again.
Put the <code>reservation</code> id in the call's <code>_meta</code> as <code>"firelimit/reservation"</code> to claim exactly
that slot (calling earlier with it returns the same reservation); without it, a call claims your token's oldest slot whose
time has come, and one made earlier queues anew. Coming back after the grace loses the slot: it is released at once for
others. The text says the same for a model.</li>
<li><code>structuredContent: { "status": "rejected", "reason": …, "retryAfterMs": …, "quota": … }</code>: no slot within
the quota's longest wait${q === undefined ? '' : html` (${Math.round(q.maxWaitMs / 1000)} s for the shared one)`} is free (<code>max_wait</code>), too many callers are waiting
(<code>reservations_full</code>), your token already holds its fair share of waiting slots, at most
<strong data-figure="upstream-reservations-per-token">${reservationsPerToken(upstream)}</strong> across every tool
(<code>token_reservations_full</code>: come back for those first), today's budget is spent (<code>daily_budget</code>), or the quota's database is
unreachable and this service is set to refuse rather than guess (<code>unavailable</code>). Wait <code>retryAfterMs</code>, then call again.</li>
</ul>
<p>For a tool that declares an <code>outputSchema</code>, these figures are in the result's
<code>_meta["firelimit/upstreamQuota"]</code> only, not in <code>structuredContent</code>, so a client that checks
structured results against the schema still reads the answer; every quota answer carries them there. (The MCP
Inspector CLI ${INSPECTOR_OBSERVED.version} prints such an answer whole and exits with code ${String(INSPECTOR_OBSERVED.toolErrorExitCode)},
<code>${INSPECTOR_OBSERVED.toolErrorCode}</code>, as it does for every result with <code>isError: true</code>.) A
<code>resources/read</code>, <code>prompts/get</code> or <code>completion/complete</code> the quota cannot run now is
answered with a JSON-RPC error, code <code>-32029</code>, whose <code>data</code> holds the same figures and the
<code>method</code>; send the same request again as the figures say. Times are to the millisecond
(<code>retryAfterMs</code>, <code>slotAtMs</code>); the text rounds to whole seconds only where that stays within the grace.</p>
<p>A reservation is not a refusal of your token: your own limit (above) is counted once per request either way.</p>
${relayed}
</section>`;
}

/** The per-token cap on the shared quota (else the first tool quota's), as the scheduler resolves it. */
function reservationsPerToken(upstream: UpstreamConfig): number {
  return reservationsPerTokenOf(anyUpstreamQuota(upstream) as NonNullable<ReturnType<typeof anyUpstreamQuota>>);
}

/** Which requests the shared quota counts (the limits file's `upstream.costs` may price some 0). */
function countedMethods(upstream: UpstreamConfig): SafeHtml {
  if (upstream.quota === undefined) return html``;
  const costs = upstream.costs ?? NO_UPSTREAM_COSTS;
  const counted = FORWARDED_METHODS.filter((method) => sharedUpstreamCostOf(costs, method) > 0);
  const free = [...costs.tools].filter(([, cost]) => cost === 0).map(([tool]) => tool).sort();
  const list = (names: readonly string[]): SafeHtml => html`${names.map((name, i) => html`${i === 0 ? '' : ', '}<code>${name}</code>`)}`;
  return html`<p>It counts every request sent on to the upstream: <span data-figure="upstream-counted-methods">${counted.join(', ')}</span>
(${counted.length === 0 ? 'none' : list(counted)}), each message of a batch on its own. The lists (<code>tools/list</code>,
<code>resources/list</code>, <code>prompts/list</code>) come from this service's cache and count nothing${free.length === 0 ? '' : html`; so do calls to ${list(free)}, which the upstream does not count`}.</p>`;
}

/** What of the upstream's news reaches a caller (ADR 0038), and what cannot on a stateless service. */
function whileItRuns(upstream: UpstreamConfig): SafeHtml {
  return html`<h3 id="upstream-progress">Progress and log messages</h3>
<p>Put a <code>progressToken</code> in a call's <code>_meta</code> and list <code>text/event-stream</code> in
<code>Accept</code> (MCP clients do both when you ask for progress): the answer is then an event stream on that same
response, with the upstream's <code>notifications/progress</code> for your call under your token, its
<code>notifications/message</code> for your call (from protocol 2026-07-28 only at or above the
<code>io.modelcontextprotocol/logLevel</code> your request names), then the result. Without a progress token the answer
is plain JSON. The whole call still ends within ${
    anyUpstreamQuota(upstream) === undefined
      ? html`<span data-figure="upstream-timeout-ms">${upstream.timeoutMs}</span> ms`
      : html`<span data-figure="upstream-call-bound-ms">${callBoundMs(upstream)}</span> ms (at most ${anyUpstreamQuota(upstream)?.holdMs ?? 0} ms waiting for its slot, then <span data-figure="upstream-timeout-ms">${upstream.timeoutMs}</span> ms upstream)`
  }, progress or not.
A client that does not read the stream it asked for is cut off once the service holds too much of it unread: the call
then ends with an error saying so.</p>
<p>Nothing is sent outside a call: no <code>list_changed</code> (the lists are refreshed at least every
<span data-figure="upstream-list-ttl-ms">${upstream.listTtlMs}</span> ms; list them again to see a change) and no
log messages from between calls. Requests from the upstream server to its client (sampling, elicitation, roots) are
never passed on to you, whatever your client offers: the upstream is refused (a server without sessions cannot even
hear that, and the call ends at its ${upstream.timeoutMs} ms deadline).</p>`;
}

/** An upstream tool as the page lists it: its name and the first line of its description. */
export interface UpstreamToolFact {
  readonly name: string;
  readonly description?: string;
}

/** The longest a forwarded call can take: its hold for a slot, then the upstream's deadline. */
export function callBoundMs(upstream: UpstreamConfig): number {
  return (anyUpstreamQuota(upstream)?.holdMs ?? 0) + upstream.timeoutMs;
}

const MAX_LISTED_TOOLS = 200;
const MAX_DESCRIPTION_CHARS = 160;

/** The upstream's tools from the last list, with what a call of each costs of your limit (rules above may add). */
function upstreamToolRows(config: Config, listed: readonly UpstreamToolFact[] | undefined): SafeHtml {
  if (config.upstream?.lists === 'per-caller') {
    return html`<p>The upstream server lists its tools to each token in its own session; <code>tools/list</code> shows yours.</p>`;
  }
  if (listed === undefined) {
    return html`<p>The upstream server has not listed its tools to this instance yet; <code>tools/list</code> shows them once it has.</p>`;
  }
  const tools = [...listed].sort((a, b) => a.name.localeCompare(b.name)).slice(0, MAX_LISTED_TOOLS);
  const rows = tools.map((tool) => {
    const cost = config.rateLimit.calls.costs.get(tool.name) ?? defaultCostOf({ method: 'tools/call', tool: tool.name });
    const description = (tool.description ?? '').split('\n')[0]?.slice(0, MAX_DESCRIPTION_CHARS) ?? '';
    return html`<tr><td><code>${tool.name}</code></td><td class="num" data-figure="upstream-tool-cost-${tool.name}">${cost}</td><td>${description}</td></tr>`;
  });
  return html`<div class="table-wrap"><table><caption class="lede">The upstream's tools (as it last listed them: ${listed.length})</caption>
<thead><tr><th scope="col">Tool</th><th scope="col">Units per call</th><th scope="col">What it does (the upstream's words)</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}
