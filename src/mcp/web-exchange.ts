import type { Request, Response } from 'express';
import { UPSTREAM_MAX_ANSWER_BYTES } from '../gateway/bounded-fetch';
import { DEFAULT_RELAY_BOUNDS, pipeBoundedStream } from './related-stream';

/**
 * The SDK serves fetch-shaped exchanges (a web `Request` in, a `Response`
 * out); Express speaks Node's. These two functions are the whole bridge.
 */

/** Any URL will do: the SDK routes on the body and headers, and the Host was validated before. */
const MCP_REQUEST_URL = 'http://firelimit.internal/mcp';

/** Headers the SDK never needs and that should not travel further than they must. */
const WITHHELD = new Set(['authorization', 'cookie', 'content-length', 'transfer-encoding', 'content-encoding', 'host', 'connection']);

/**
 * A body-less web Request carrying the headers the SDK reads (Accept,
 * Content-Type, MCP-Protocol-Version, Mcp-Method, Mcp-Name, ...). The body
 * goes to the SDK already parsed (`parsedBody`), so it is neither serialized
 * again nor read twice; the bearer secret stays behind in Express.
 */
export function webRequestOf(req: Request, signal: AbortSignal): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || WITHHELD.has(name)) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  return new Request(MCP_REQUEST_URL, { method: 'POST', headers, signal });
}

/**
 * Writes the SDK's answer through Express, keeping the rate-limit headers already set on `res`. A stream is passed on
 * under the relay bounds (./related-stream pipeBoundedStream); `onCut` hears why one was cut.
 */
export async function sendWebResponse(res: Response, response: globalThis.Response, onCut?: (why: string) => void): Promise<void> {
  res.status(response.status);
  response.headers.forEach((value, name) => {
    res.setHeader(name, value);
  });
  if (response.body === null) {
    res.end();
    return;
  }
  if (response.headers.get('content-type')?.startsWith('text/event-stream') !== true) {
    res.end(Buffer.from(await response.arrayBuffer()));
    return;
  }
  // A stream (only if a handler sent messages before its result): pass it on as it comes.
  res.flushHeaders();
  await pipeBoundedStream(res, response.body, UPSTREAM_MAX_ANSWER_BYTES, DEFAULT_RELAY_BOUNDS, onCut);
}
