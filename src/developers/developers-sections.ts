import type { DevelopersFacts, TierFact } from './developers-facts';
import { html, type SafeHtml } from './html';

/** A figure the browser test reads back: the visible text must equal the configured value. */
function figure(name: string, value: string | number): SafeHtml {
  return html`<strong data-figure="${name}">${value}</strong>`;
}

const plural = (n: number, one: string, many: string): string => (n === 1 ? one : many);

export function summarySection(f: DevelopersFacts): SafeHtml {
  const d = f.defaultTier;
  return html`<section aria-labelledby="limits">
<h2 id="limits">Your limit</h2>
<div class="summary">
  <p class="card"><span class="big">${figure('limit-default', d.limit)}</span>
    <span class="label">requests per token per ${figure('window-default', d.windowSeconds)} seconds (tier <code>${d.name}</code>)</span></p>
  <p class="card"><span class="big" data-figure="sharing">${f.shared ? 'Shared' : 'Per instance'}</span>
    <span class="label">${f.shared ? 'one count across every instance' : 'each instance counts on its own'}</span></p>
</div>
<p>Every token belongs to a tier. A call to <code>/mcp</code> costs one request unless <a href="#costs">listed below</a>. Tier <code>${d.name}</code>
allows ${promises(d)}.${d.policies.length > 1 ? ' A call must fit every one of these; a refused call counts against none of them.' : ''}</p>
${tierTable(f.tiers)}
</section>`;
}

/** "at most 120 in any minute, and bursts of up to 10, then one call every 0.5 s": every policy of a tier, from its algorithm. */
function promises(t: TierFact): string {
  return t.policies.map((p) => p.words).join(', and ');
}

function tierTable(tiers: readonly TierFact[]): SafeHtml {
  const rows = tiers.flatMap((t) =>
    t.policies.map((p, i) => {
      // The first policy keeps the figure names the page always had; the others are named by policy.
      const id = i === 0 ? `tier-${t.name}` : `policy-${t.name}-${p.name}`;
      return html`<tr><td><code>${t.name}</code>${t.isDefault && i === 0 ? ' (default)' : ''}</td>
<td class="num">${figure(`limit-${id}`, p.limit)}</td>
<td class="num">${figure(`window-${id}`, p.windowSeconds)} s</td>
<td><code>${p.algorithm}</code>: <span data-figure="promise-${id}">${p.words}</span></td></tr>`;
    }),
  );
  return html`<div class="table-wrap"><table>
<caption class="lede">Tiers configured on this service</caption>
<thead><tr><th scope="col">Tier</th><th scope="col">Requests per token</th><th scope="col">Window</th><th scope="col">What it promises</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

/** What a fail-open outage may admit, by RATE_LIMIT_OUTAGE_SHARE (ADR 0067). */
function outageBound(f: DevelopersFacts): SafeHtml {
  const d = f.defaultTier;
  if (f.outageShare === 'instance') {
    return html`Each instance counts ${figure('outage-share', 'on its own')}: in the worst case, with N instances, a
token can make N × ${d.limit} requests in a ${d.windowSeconds}-second window with the store down in it.`;
  }
  return html`Each instance admits ${figure('outage-share', 'its share')} of what your token had left: that, divided by
the number of instances the service counted before the store went down, and at least one request. So all instances
together admit about what was left of your ${d.limit} per ${d.windowSeconds} s while the store is down (at most N
requests when N instances are more than that), more if instances were started during the outage, and, just after the
store is back, what another instance granted before it has reported it. The <code>remaining</code> you are told
during the outage is this instance's share.`;
}

export function sharingSection(f: DevelopersFacts): SafeHtml {
  const d = f.defaultTier;
  const where = html`<p>Counters live in ${figure('backend', f.backendLabel)}.</p>`;
  if (!f.shared) {
    return html`<section aria-labelledby="sharing">
<h2 id="sharing">Is the limit shared across instances?</h2>
${where}
<p class="note">No. This deployment counts in memory, so <strong>each instance keeps its own count</strong>.
If the service runs several instances, a token can make up to ${d.limit} requests per ${d.windowSeconds} s
<em>on each of them</em> (N instances: up to N × ${d.limit}). There is no shared store, so nothing here can
become unavailable. The <code>rate_limit_status</code> tool reports <code>"shared": false</code>.</p>
</section>`;
  }
  const outage =
    f.failurePolicy === 'fail-open'
      ? html`<p>The failure policy is ${figure('failure-policy', f.failurePolicy)}: <strong>requests keep being
answered</strong>, and each instance enforces the limit from its own local window until the store is back. That
window starts from what the instance last saw the shared count at, and what it grants is added to the shared count
when the store returns, so the rest of the window is not handed out again. ${outageBound(f)} During that
time <code>rate_limit_status</code> reports <code>"shared": false</code>.</p>`
      : html`<p>The failure policy is ${figure('failure-policy', f.failurePolicy)}: requests that cannot be counted
are <strong>refused with HTTP 503</strong> and a <code>Retry-After</code> header. This is not your quota running out;
wait the given seconds and retry.</p>`;
  return html`<section aria-labelledby="sharing">
<h2 id="sharing">Is the limit shared across instances?</h2>
${where}
<p>Yes. Every instance of the service counts against the same store, so your limit is the same whichever
instance answers.</p>
<h3>When the shared store is unavailable</h3>
<p>If the store has not answered within ${figure('timeout-ms', f.timeoutMs)} ms, or fails, the instance does not make
you wait longer than that, in all for one request: the sign-in check and every limit the request meets share
that time.</p>
${outage}
</section>`;
}

// A definition list, not a table: header names are long words that a phone-width table column would break apart.
function headerItems(headers: readonly (readonly [string, string])[], meaning: Record<string, string>): SafeHtml[] {
  return headers.map(
    ([name, value]) => html`<div class="header-item"><dt><code>${name}</code></dt>
<dd>${meaning[name.toLowerCase()] ?? ''}<br><span class="example">Example: <code>${value}</code></span></dd></div>`,
  );
}

export function headersSection(f: DevelopersFacts): SafeHtml {
  const d = f.defaultTier;
  const meaning: Record<string, string> = {
    'x-ratelimit-limit': 'Requests your token may make in the current window (for a token or leaky bucket: its burst, the most at once).',
    'x-ratelimit-remaining': 'Requests left in the current window after this one (for a bucket: left at once now).',
    'x-ratelimit-reset': 'When the current window ends (for a bucket: when it is full again), as Unix time in seconds (UTC).',
    'ratelimit-policy':
      'The policy (draft-ietf-httpapi-ratelimit-headers-10): name, quota q, window w in seconds; a bucket adds burst, the most at once, and its q is its rate per window.',
    ratelimit: 'The current state (same draft): remaining r, seconds until the window resets t.',
    'retry-after': 'Only on refusals: whole seconds to wait before retrying.',
  };
  const refusalOnly = f.refusedHeaders.filter(([name]) => name === 'Retry-After');
  return html`<section aria-labelledby="headers">
<h2 id="headers">Rate-limit headers</h2>
<p>Every response to a call with a valid token, allowed or refused, carries these headers. Example values for the
<code>${d.name}</code> tier (${d.limit} per ${d.windowSeconds} s):</p>
<dl class="headers">${headerItems(f.allowedHeaders, meaning)}${headerItems(refusalOnly, meaning)}</dl>
<p><code>RateLimit-Policy</code> and <code>RateLimit</code> follow
<a href="https://datatracker.ietf.org/doc/html/draft-ietf-httpapi-ratelimit-headers-10">draft-ietf-httpapi-ratelimit-headers-10</a>;
the <code>x-ratelimit-*</code> trio is the common de-facto form. They always agree.</p>
</section>`;
}

export function refusalSection(f: DevelopersFacts): SafeHtml {
  const a = f.authFailures;
  const headers = f.refusedHeaders.map(([name, value]) => `${name}: ${value}`).join('\n');
  return html`<section aria-labelledby="429">
<h2 id="429">What a 429 means, and how to back off</h2>
<p><strong>HTTP 429 Too Many Requests</strong> means your token has used what its tier allows for now (see
<a href="#limits">your limit</a>). Nothing is wrong with your request; it was not run, and it counted against
nothing. <code>Retry-After</code> says when the same call would pass.</p>
<pre><code>HTTP/1.1 429 Too Many Requests
${headers}
Content-Type: application/json

${JSON.stringify(f.refusedBody, null, 2)}</code></pre>
<ol>
<li><strong>Obey <code>Retry-After</code> first</strong>: wait at least that many seconds.</li>
<li>Without it, wait until <code>x-ratelimit-reset</code> (Unix seconds), or for <code>t</code> seconds from the
<code>RateLimit</code> header.</li>
<li>Add jitter: a random extra delay (for example up to a second), so many clients do not retry at the same instant.</li>
<li>Do not retry in a tight loop. Refused requests still reach the service; slow down before you hit zero by
watching <code>x-ratelimit-remaining</code>.</li>
</ol>
<h3>Failed sign-ins</h3>
<p>Requests with a missing, unknown or revoked token get <strong>401</strong>, and they never count against a
token. They are limited per client address instead: ${figure('limit-auth-failures', a.limit)} failed
${plural(a.limit, 'attempt', 'attempts')} per ${figure('window-auth-failures', a.windowSeconds)} seconds, after
which that address gets 429 until the window ends. Sending the same wrong token again counts once, so a client
reconnecting with a revoked token does not lock its address out. A valid token with the wrong scope gets 403.</p>
<p>Only failures count: many valid tokens signing in at once from one address (behind a NAT, from an agent
platform) are checked a few at a time and all get in; the first call of each may take a little longer.</p>
<p>Requests that cannot sign in at all (no token, a malformed one, or one already refused) are also limited to
${figure('limit-unauthenticated', f.unauthenticated.limit)} per
${figure('window-unauthenticated', f.unauthenticated.windowSeconds)} seconds per address on each instance. A valid
token never spends this budget.</p>
<h3>Requests that are refused before they are counted</h3>
<p>A request whose body is not valid JSON-RPC, is too large, nests too deeply, holds more messages than allowed in
one batch, or asks for a protocol version this server does not speak gets a 4xx explaining why, and it is
<strong>not counted</strong> against your limit. A batch that costs more than your limit could ever allow gets 413:
split it. A token that sends more than ${figure('limit-refused-requests', f.refusedRequests.limit)} such requests per
${figure('window-refused-requests', f.refusedRequests.windowSeconds)} seconds to one instance gets 429
(<code>reason: "refused_requests"</code>) until the window ends.</p>
</section>`;
}

export function tokenSection(f: DevelopersFacts): SafeHtml {
  const tierNames = f.tiers.map((t) => t.name).join(', ');
  return html`<section aria-labelledby="tokens">
<h2 id="tokens">Getting a token</h2>
<p><strong>Integrators</strong>: ask the operator of this service for a token, and say which tier you need
(available: ${tierNames}). You will receive the secret once; keep it out of source control.</p>
<p><strong>Operators</strong> create, list and revoke tokens from a checkout of the service:</p>
<pre><code>npm run token -- create --name NAME [--tier TIER]
npm run token -- list
npm run token -- revoke ID</code></pre>
<p>Only a hash of the secret is stored, so a lost token cannot be shown again: revoke it and create another.
Instances remember a verified token for up to ${figure('token-cache-seconds', f.tokenCacheSeconds)} seconds,
so a revocation or tier change takes effect everywhere within that time.</p>
</section>`;
}

export function examplesSection(f: DevelopersFacts): SafeHtml {
  const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });
  const client = JSON.stringify(
    { mcpServers: { firelimit: { type: 'http', url: f.mcpUrl, headers: { Authorization: 'Bearer <token>' } } } },
    null,
    2,
  );
  return html`<section aria-labelledby="examples">
<h2 id="examples">Try it</h2>
<h3>With curl</h3>
<p>Ask for your current limit with the <code>rate_limit_status</code> tool. <code>-i</code> shows the rate-limit
headers. The server is stateless, so a single <code>tools/call</code> needs no <code>initialize</code> first. Every
answer is JSON, so <code>Accept: application/json</code> is enough (or send none); clients that also list
<code>text/event-stream</code> are answered the same way, unless they ask a tool that reports progress for it.</p>
<pre><code data-example="curl">curl -i '${f.mcpUrl}' \\
  -H 'Authorization: Bearer &lt;token&gt;' \\
  -H 'Content-Type: application/json' \\
  -H 'Accept: application/json' \\
  -d '${call}'</code></pre>
<h3>In an MCP client</h3>
<p>Most clients that speak Streamable HTTP take an entry like this (for example <code>.mcp.json</code>):</p>
<pre><code data-example="mcp-config">${client}</code></pre>
<p>Or from the command line, for Claude Code:</p>
<pre><code>claude mcp add --transport http firelimit '${f.mcpUrl}' \\
  --header 'Authorization: Bearer &lt;token&gt;'</code></pre>
<p>Replace <code>&lt;token&gt;</code> with your secret.</p>
</section>`;
}
