import type { DevelopersFacts } from './developers-facts';
import { html, type SafeHtml } from './html';

/** One client and how a refusal reaches code that uses it. */
interface ClientReading {
  readonly id: string;
  readonly name: string;
  readonly what: SafeHtml;
}

/**
 * What each client hands its caller when /mcp answers 429. The SDK entries
 * are held to the clients themselves by test/integration/mcp-real-clients.test.ts
 * (SDK 1.32 and 2.4, both protocol eras); the others say what those clients
 * did when they were tried against this service (issue 9), and name the
 * version that was tried.
 */
function readings(): readonly ClientReading[] {
  const retry = html`<code>retryAfterSeconds</code>`;
  return [
    {
      id: 'client-sdk-2',
      name: 'MCP TypeScript SDK 2.x (@modelcontextprotocol/client)',
      what: html`<p>The call rejects with <code>SdkHttpError</code>: <code>error.status === 429</code>, and
<code>error.data.text</code> is our JSON-RPC body, so <code>JSON.parse(error.data.text).error.data.${retry}</code> is the
wait. The same in both protocol eras (2026-07-28 and the 2025 handshake). The client keeps the headers to itself: to
read <code>Retry-After</code>, pass a <code>fetch</code> to <code>StreamableHTTPClientTransport</code> that records
<code>response.headers.get('retry-after')</code>.</p>`,
    },
    {
      id: 'client-sdk-1',
      name: 'MCP TypeScript SDK 1.x (@modelcontextprotocol/sdk)',
      what: html`<p>The call rejects with <code>StreamableHTTPError</code>: <code>error.code === 429</code>, and our
JSON-RPC body is the end of <code>error.message</code>
(<code>JSON.parse(error.message.slice(error.message.indexOf('{')))</code>). <code>Retry-After</code>: the same
<code>fetch</code> wrapper as for 2.x.</p>`,
    },
    {
      id: 'client-mcp-remote',
      name: 'mcp-remote (tried: 0.15)',
      what: html`<p>It hands your MCP host a JSON-RPC error with code <code>-32001</code>, which is also what this service
answers for a missing or wrong token, so the code alone does not tell the two apart. Our <code>data</code> does not
reach the host; the message keeps our words, which always end "Retry after <var>N</var> s".</p>`,
    },
    {
      id: 'client-inspector',
      name: 'MCP Inspector CLI (tried: 2.12)',
      what: html`<p>Prints the error, with the HTTP status 429 and our body, and exits non-zero. Nothing retries; wait
the seconds the message names and run it again.</p>`,
    },
    {
      id: 'client-ai-sdk',
      name: 'Vercel AI SDK (@ai-sdk/mcp)',
      what: html`<p>The only one of these that hands the caller our JSON-RPC <code>data</code> as data: the error it throws
carries ${retry}, <code>limit</code> and <code>resetAt</code> as fields, no parsing needed.</p>`,
    },
    {
      id: 'client-langchain',
      name: 'LangChain MCP adapters (@langchain/mcp-adapters)',
      what: html`<p>The tool call fails with a <code>ToolException</code> whose message is a string holding our text; a
model reading it sees "Retry after <var>N</var> s". Code that wants the figure parses that sentence.</p>`,
    },
  ];
}

export function clientRefusalSection(f: DevelopersFacts): SafeHtml {
  const d = f.defaultTier;
  const items = readings().map(
    (r) => html`<div class="client" id="${r.id}"><h3>${r.name}</h3>
${r.what}</div>`,
  );
  return html`<section aria-labelledby="clients">
<h2 id="clients">Reading a refusal in your client</h2>
<p>No MCP client retries a 429 by itself, and each shows it differently. What the service sends is always the same:
HTTP 429, a <code>Retry-After</code> header (seconds), and a JSON-RPC error with code <code>-32029</code> whose
<code>message</code> says in words when to retry ("Rate limit of ${d.limit} requests per ${d.windowSeconds} s
exceeded. Retry after <var>N</var> s.") and whose <code>data</code> has the figures (<code>retryAfterSeconds</code>,
<code>limit</code>, <code>windowSeconds</code>, <code>resetAt</code>). Where a client gives you only a string, the
sentence is there to read; where it gives you the body, use <code>data</code>.</p>
${items}
</section>`;
}
