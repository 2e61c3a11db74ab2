import type { ServerCapabilities } from '@modelcontextprotocol/server';

/** What every MCP server answers, whatever it advertises: the handshakes of both eras and ping. */
const ALWAYS: readonly string[] = ['initialize', 'server/discover', 'ping'];

/** The request methods each server capability brings (MCP 2025-11-25 and 2026-07-28). */
const BY_CAPABILITY: Readonly<Record<string, readonly string[]>> = {
  tools: ['tools/list', 'tools/call'],
  resources: ['resources/list', 'resources/templates/list', 'resources/read'],
  prompts: ['prompts/list', 'prompts/get'],
  logging: ['logging/setLevel'],
  completions: ['completion/complete'],
};

/**
 * The request methods a server with these capabilities answers; any other
 * gets -32601 (Method not found), which the charge prices at 0
 * (src/policies/free-calls.ts). `resources.subscribe` adds the two
 * subscription methods.
 */
export function servedMethodsOf(capabilities: ServerCapabilities): ReadonlySet<string> {
  const methods = new Set(ALWAYS);
  for (const [capability, brings] of Object.entries(BY_CAPABILITY)) {
    if ((capabilities as Record<string, unknown>)[capability] !== undefined) for (const method of brings) methods.add(method);
  }
  if (capabilities.resources?.subscribe === true) {
    methods.add('resources/subscribe');
    methods.add('resources/unsubscribe');
  }
  return methods;
}
