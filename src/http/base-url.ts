import type { Request } from 'express';

// A Host header is "name[:port]" or "[ipv6][:port]"; anything else is not echoed back.
const HOST_PATTERN = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The origin a visitor reached us at, for copy-pasteable examples and links.
 * Cloud Run terminates TLS in front of us, so X-Forwarded-Proto says https
 * while the socket says http; only the first hop's value is used. A Host that
 * is not a plain authority is replaced by localhost on `fallbackPort`, so
 * nothing a client wrote beyond a host name is echoed into a page or a body.
 */
export function baseUrlOf(req: Request, fallbackPort: number): string {
  const forwarded = req.get('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
  const protocol = forwarded === 'http' || forwarded === 'https' ? forwarded : req.protocol === 'https' ? 'https' : 'http';
  const host = req.get('host');
  return `${protocol}://${host !== undefined && HOST_PATTERN.test(host) ? host : `localhost:${fallbackPort}`}`;
}
