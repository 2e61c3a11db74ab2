import type { AuthInfo, JSONRPCRequest } from '@modelcontextprotocol/server';

export type RequestEntry = (message: JSONRPCRequest, extra: { authInfo: AuthInfo }) => void;

/**
 * The SDK protocol layer's request entry (`_onrequest`, what its `onmessage`
 * wrapper calls for a request), or undefined when this SDK has none.
 *
 * The wrapper tells a request from a response and a notification with four
 * zod parses, the two that fail for a request building their issue objects;
 * our shared transports hand over only JSON-RPC requests whose shape src/http
 * checked before the limiter, so they call the entry straight. An SDK that
 * renames it keeps the wrapper (tests say so: mcp-shared-server, mcp-modern-shared).
 */
export function protocolRequestEntry(protocol: unknown): RequestEntry | undefined {
  const onrequest = (protocol as { _onrequest?: unknown } | null)?._onrequest;
  if (typeof onrequest !== 'function') return undefined;
  return (message, extra) => {
    onrequest.call(protocol, message, extra);
  };
}
