// The Vercel AI SDK's MCP client (@ai-sdk/mcp) is ESM only, which jest's
// CommonJS runtime cannot load; so the client runs here, in its own Node
// process, and prints what it saw as one JSON object on stdout for
// test/integration/mcp-third-party-clients.test.ts to hold against the wire.
import { createMCPClient } from '@ai-sdk/mcp';

const [url, secret, attempts] = process.argv.slice(2);

/** Everything an error hands its caller, own fields included, so the test sees what a caller can read. */
function describeError(error) {
  const fields = {};
  for (const key of Object.getOwnPropertyNames(error)) {
    if (key === 'stack' || key === 'cause') continue;
    fields[key] = error[key];
  }
  return { constructorName: error?.constructor?.name, fields };
}

const client = await createMCPClient({
  transport: { type: 'http', url, headers: { Authorization: `Bearer ${secret}` } },
});
const report = {};
try {
  report.serverName = client.serverInfo?.name;
  report.protocolVersion = client.initializeResult?.protocolVersion;
  const listed = await client.listTools();
  report.tools = listed.tools.map((tool) => tool.name).sort();
  const who = await client.callTool({ name: 'whoami', arguments: {} });
  report.whoami = { isError: who.isError ?? false, structuredContent: who.structuredContent };
  for (let i = 0; i < Number(attempts) && report.refusal === undefined; i++) {
    await client.callTool({ name: 'whoami', arguments: {} }).then(
      () => undefined,
      (error) => {
        report.refusal = describeError(error);
      },
    );
  }
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(report));
