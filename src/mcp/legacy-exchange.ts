import { WebStandardStreamableHTTPServerTransport, type AuthInfo, type McpServer } from '@modelcontextprotocol/server';
import { readsResource, withResourceNotFound2025 } from './resource-not-found';

/** The Accept the SDK's 2025 transport insists on; the protocol check has already made sure the client takes JSON. */
export const LEGACY_TRANSPORT_ACCEPT = 'application/json, text/event-stream';

/**
 * One 2025-era exchange on a lent server: the SDK's own stateless transport
 * (no session id) with JSON answers, never an SSE stream. Closing the
 * transport afterwards is what hands the server back to its pool. An unknown
 * resource is answered with the 2025 specs' -32002 (./resource-not-found).
 */
export async function serveLegacyExchange(
  server: McpServer,
  request: Request,
  parsedBody: unknown,
  authInfo: AuthInfo,
  onerror: (error: Error) => void,
): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  transport.onerror = onerror;
  try {
    await server.connect(transport);
    const response = await transport.handleRequest(request, { parsedBody, authInfo });
    if (!readsResource(parsedBody) || response.status !== 200) return response;
    const answer = withResourceNotFound2025(await response.json());
    return Response.json(answer, { status: response.status, headers: response.headers });
  } finally {
    await transport.close();
  }
}
