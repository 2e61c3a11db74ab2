import type { DevelopersFacts } from './developers-facts';
import { html, type SafeHtml } from './html';

/** One client and how a refusal reaches code that uses it. */
interface ClientReading {
  readonly id: string;
  readonly name: string;
  readonly what: SafeHtml;
}

/**
 * What the third-party clients showed when test/integration/mcp-third-party-clients.test.ts
 * ran them against this service. The test asserts every field against the
 * client itself (and the version against the installed package), and the
 * page below is written from these, so the page cannot drift from the client.
 */
export const AI_SDK_OBSERVED = {
  packageName: '@ai-sdk/mcp',
  version: '2.0.99',
  protocolVersion: '2026-07-28',
  errorClass: 'MCPClientError',
  /** The error's own fields, all of them: no HTTP status (`statusCode` stays unset), no headers, no body text. */
  errorFields: ['code', 'data', 'message', 'name'],
} as const;

export const MCP_REMOTE_OBSERVED = {
  packageName: 'mcp-remote',
  version: '0.15.1',
  /** The code it answers the host with, whatever the server's was. */
  code: -32001,
  /** What its message starts with; our whole JSON-RPC body follows. */
  messagePrefix: 'mcp-remote: Error POSTing to endpoint: ',
  /** Without a token it tries OAuth; this is what it prints (stderr) before exiting, followed by our /register body. */
  noTokenMessage: 'Dynamic Client Registration rejected (HTTP 403)',
} as const;

export const LANGCHAIN_OBSERVED = {
  packageName: '@langchain/mcp-adapters',
  version: '1.1.4',
  errorClass: 'ToolException',
  /** What its message starts with for the whoami tool; our whole JSON-RPC body follows. */
  messagePrefix: 'Error calling tool whoami: Error: Streamable HTTP error: Error POSTing to endpoint: ',
} as const;

/**
 * What the MCP Inspector CLI (`--cli`) showed when `npm run inspector-check`
 * (scripts/inspector-check.ts) ran it against this service. It needs Node 22,
 * so it is fetched on demand through npx; the script fails when the Inspector
 * stops matching any field here, and test/integration/inspector-cli.test.ts
 * (in `npm test`) holds the gateway and OpenID provider fields.
 */
export const INSPECTOR_OBSERVED = {
  packageName: '@modelcontextprotocol/inspector',
  version: '2.12.0',
  /** A refused call: nothing on stdout, this exit code, one JSON line `{"error":{code,message,cause,status}}` on stderr. */
  refusedExitCode: 1,
  refusedStatus: 429,
  /** What the error's message starts with; then `retrySentence` with our Retry-After, then `bodyPrefix` and our whole JSON-RPC body. */
  refusedMessagePrefix: 'Rate limited by the server (HTTP 429) on tools/call. ',
  retrySentence: 'The server asked to retry after ',
  bodyPrefix: 'Error POSTing to endpoint: ',
  /** A missing or wrong token: this exit code and error code, whichever way the run goes. */
  authExitCode: 3,
  authErrorCode: 'auth_required',
  /** Run with no terminal (a script, CI) and without `--stored-auth-only`, it says only this about the 401. */
  noTtyMessagePrefix: 'Interactive OAuth requires a TTY',
  /** In a terminal with no token it tries OAuth and stops with this, followed by our /register answer. */
  noTokenTerminalMessage: 'Dynamic Client Registration rejected (HTTP 403)',
  /**
   * A tool result with `isError: true` (the gateway's "reserved"/"rejected" answer): the whole result on
   * stdout, then this exit code and error code on stderr. Held by test/integration/inspector-cli.test.ts.
   */
  toolErrorExitCode: 5,
  toolErrorCode: 'tool_is_error',
} as const;

/**
 * What each client hands its caller when /mcp answers 429. The SDK entries
 * are held to the clients themselves by test/integration/mcp-real-clients.test.ts
 * (SDK 1.32 and 2.4, both protocol eras), the AI SDK and mcp-remote entries
 * by test/integration/mcp-third-party-clients.test.ts through the constants
 * above, the Inspector entry by `npm run inspector-check` through
 * INSPECTOR_OBSERVED.
 */
function readings(): readonly ClientReading[] {
  const retry = html`<code>retryAfterSeconds</code>`;
  const ai = AI_SDK_OBSERVED;
  const remote = MCP_REMOTE_OBSERVED;
  const lc = LANGCHAIN_OBSERVED;
  const insp = INSPECTOR_OBSERVED;
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
      name: `mcp-remote (tested: ${remote.version})`,
      what: html`<p>It hands your MCP host a JSON-RPC error with code <code>${remote.code}</code>, which is also what
this service answers for a missing or wrong token, so the code alone does not tell the two apart. The error has no
<code>data</code>; its <code>message</code> is <code>${remote.messagePrefix}</code> followed by our whole JSON-RPC body,
so <code>JSON.parse(message.slice(message.indexOf('{'))).error.data.${retry}</code> is the wait (and the sentence
"Retry after <var>N</var> s" is there for a model to read). Neither the 429 nor <code>Retry-After</code> reaches the
host; the status appears only in mcp-remote's own log (stderr). Run without a token, it tries OAuth discovery, stops
with "${remote.noTokenMessage}" followed by our answer, which says to send <code>Authorization: Bearer flk_...</code>
(pass it with <code>--header</code>), and exits.</p>`,
    },
    {
      id: 'client-inspector',
      name: `MCP Inspector CLI (${insp.packageName} --cli, tested: ${insp.version})`,
      what: html`<p>Pass the token as <code>--header "Authorization: Bearer flk_..."</code> with
<code>--transport http</code>. A refused call prints nothing on stdout and exits with code
<code>${insp.refusedExitCode}</code>; stderr has one JSON line, <code>{"error":{...,"status":${insp.refusedStatus}}}</code>,
whose <code>message</code> is "${insp.refusedMessagePrefix}${insp.retrySentence}<var>N</var>s." (<var>N</var> from our
<code>Retry-After</code>) followed by "${insp.bodyPrefix}" and our whole JSON-RPC body, so
<code>JSON.parse(message.slice(message.indexOf('{'))).error.data.${retry}</code> is the wait. Nothing retries; wait and
run it again. A missing or wrong token exits with code <code>${insp.authExitCode}</code>
(<code>"code":"${insp.authErrorCode}"</code>): the Inspector takes our 401 for an OAuth challenge. In a terminal, with
no token, it tries OAuth discovery and stops with "${insp.noTokenTerminalMessage}" followed by our answer, which says
to send <code>Authorization: Bearer flk_...</code>. In a script (no TTY) it says only "${insp.noTtyMessagePrefix} ...";
add <code>--stored-auth-only</code> and it prints our 401 body instead, whose <code>data.reason</code> is
<code>missing_token</code> or <code>malformed_token</code>.</p>`,
    },
    {
      id: 'client-ai-sdk',
      name: `Vercel AI SDK (${ai.packageName}, tested: ${ai.version})`,
      what: html`<p>The call rejects with <code>${ai.errorClass}</code> whose <code>code</code> is our
<code>${ai.protocolVersion >= '2026-07-28' ? '429' : '-32029'}</code> (the code of the ${ai.protocolVersion} revision it connects in) and whose <code>data</code> is our JSON-RPC <code>data</code>: <code>error.data.${retry}</code>,
<code>limit</code> and <code>resetAt</code> as fields, no parsing needed; <code>message</code> is our sentence. It is the
only client here that hands over <code>data</code> as data. The HTTP status is not on the error
(<code>statusCode</code> stays unset) and neither is <code>Retry-After</code>; <code>data.${retry}</code> is the same
figure. It connects in the ${ai.protocolVersion} protocol.</p>`,
    },
    {
      id: 'client-langchain',
      name: `LangChain MCP adapters (${lc.packageName}, tested: ${lc.version})`,
      what: html`<p>The tool's <code>invoke</code> rejects with a <code>${lc.errorClass}</code> that carries only a
<code>message</code>: "Error calling tool <var>name</var>: Error: Streamable HTTP error: Error POSTing to endpoint: "
followed by our whole JSON-RPC body. A model reading it sees "Retry after <var>N</var> s"; code parses the body,
<code>JSON.parse(error.message.slice(error.message.indexOf('{'))).error.data.${retry}</code>. No status, no
<code>Retry-After</code>.</p>`,
    },
  ];
}

/** The example refusal's own sentence up to its figure of seconds: "Rate limit of 120 requests per 60 s exceeded. Retry after ". */
function refusalSentence(f: DevelopersFacts): string {
  const message = (f.refusedBody as { error: { message: string } }).error.message;
  return message.replace(/\d+ s\.$/, '');
}

export function clientRefusalSection(f: DevelopersFacts): SafeHtml {
  const items = readings().map(
    (r) => html`<div class="client" id="${r.id}"><h3>${r.name}</h3>
${r.what}</div>`,
  );
  return html`<section aria-labelledby="clients">
<h2 id="clients">Reading a refusal in your client</h2>
<p>No MCP client retries a 429 by itself, and each shows it differently. What the service sends is always the same:
HTTP 429, a <code>Retry-After</code> header (seconds), and a JSON-RPC error with code <code>-32029</code> (2025
protocol revisions) or <code>429</code> (2026-07-28, which reserves -32020..-32099 for its own codes) whose
<code>message</code> says in words when to retry ("${refusalSentence(f)}<var>N</var> s.") and whose <code>data</code> has the figures (<code>retryAfterSeconds</code>,
<code>limit</code>, <code>windowSeconds</code>, <code>resetAt</code>, and for a bucket <code>burst</code>). Where a client gives you only a string, the
sentence is there to read; where it gives you the body, use <code>data</code>.</p>
${items}
</section>`;
}
