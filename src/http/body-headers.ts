import type { IncomingHttpHeaders } from 'node:http';

/**
 * What the headers alone say about a request body, decided before a byte of
 * it is read. Pure: the adapters in ./json-rpc-body turn a problem into a
 * response.
 */
export type BodyHeaderProblem =
  | { readonly problem: 'declared_too_large'; readonly declaredBytes: number; readonly maxBodyBytes: number }
  | { readonly problem: 'not_json'; readonly contentType: string | undefined }
  | { readonly problem: 'unsupported_charset'; readonly charset: string }
  | { readonly problem: 'unsupported_encoding'; readonly contentEncoding: string };

/**
 * A Content-Length over the limit: refused before reading anything. Node's
 * parser has already rejected a malformed or duplicated Content-Length, so a
 * present value is a plain non-negative integer.
 */
export function declaredLengthProblem(headers: IncomingHttpHeaders, maxBodyBytes: number): BodyHeaderProblem | undefined {
  const raw = headers['content-length'];
  if (raw === undefined) return undefined;
  const declaredBytes = Number(raw);
  return Number.isFinite(declaredBytes) && declaredBytes > maxBodyBytes ? { problem: 'declared_too_large', declaredBytes, maxBodyBytes } : undefined;
}

/**
 * The body must be `application/json`, in UTF-8 (RFC 8259 §8.1: the only
 * charset JSON exchanged between systems may use) or with no charset, and not
 * compressed: a compressed body would let a small request inflate past every
 * byte bound we set, so only `identity` is accepted.
 */
export function bodyEncodingProblem(headers: IncomingHttpHeaders): BodyHeaderProblem | undefined {
  const encoding = (headers['content-encoding'] ?? '').trim().toLowerCase();
  if (encoding !== '' && encoding !== 'identity') return { problem: 'unsupported_encoding', contentEncoding: encoding };

  const contentType = headers['content-type'];
  const parsed = parseMediaType(contentType);
  if (parsed === undefined || parsed.essence !== 'application/json') return { problem: 'not_json', contentType };
  const charset = parsed.parameters.get('charset');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') return { problem: 'unsupported_charset', charset };
  return undefined;
}

/** Whether a Content-Type header's media type is application/json, parameters aside (as the SDK's check). */
export function isJsonContentType(header: string | undefined): boolean {
  return parseMediaType(header)?.essence === 'application/json';
}

interface MediaType {
  readonly essence: string;
  /** Parameter names and values, lower-cased, quotes removed. */
  readonly parameters: ReadonlyMap<string, string>;
}

/** `type/subtype; name=value; ...` (RFC 9110 §8.3.1), lenient about stray semicolons as the SDK is. */
export function parseMediaType(header: string | undefined): MediaType | undefined {
  if (header === undefined) return undefined;
  const [head, ...rest] = header.split(';');
  const essence = (head ?? '').trim().toLowerCase();
  if (!/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(essence)) return undefined;
  const parameters = new Map<string, string>();
  for (const part of rest) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim().toLowerCase();
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (name !== '' && !parameters.has(name)) parameters.set(name, value.toLowerCase());
  }
  return { essence, parameters };
}
