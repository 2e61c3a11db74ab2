import type { LogFields } from './logger';

/**
 * Defence in depth: callers are told never to log secrets, and this guard
 * catches the ones who forget. It runs on every entry before it is written.
 */

/**
 * Field names that are never written, whatever they hold. The field is
 * dropped, not masked: a key named "authorization" in the logs invites the
 * question of what else was logged beside it.
 */
const SENSITIVE_KEY = /authorization|cookie|token|secret|passw(?:or)?d|pwd|hash|api[-_]?key|credential|private[-_]?key|bearer|signature/i;

/** Names that match SENSITIVE_KEY but hold public values (a token's public id is the rate-limit key, meant for logs). */
const PUBLIC_KEYS = new Set(['tokenId', 'token_id', 'tokenName', 'tokenTier', 'tokenStore']);

export const REDACTED = '[redacted]';

const MAX_DEPTH = 8;

// Values that are secrets whatever field they are in.
const VALUE_RULES: readonly [RegExp, string][] = [
  // firelimit secrets (TOKEN_SECRET_PREFIX) and whatever follows a Bearer scheme.
  [/flk_[A-Za-z0-9_-]+/g, `flk_${REDACTED}`],
  [/\b(Bearer|Basic)\s+[^\s",;]+/gi, `$1 ${REDACTED}`],
  // user:password@ in any URL (a Redis or database URL pasted into an error message).
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, `$1${REDACTED}@`],
  // A SHA-256 in hex is how token secrets are stored; trace ids are 32 hex, span ids 16, so 64 is unambiguous.
  [/\b[0-9a-f]{64}\b/gi, REDACTED],
];

export function isSensitiveKey(key: string): boolean {
  return !PUBLIC_KEYS.has(key) && SENSITIVE_KEY.test(key);
}

/** Masks secret-looking substrings of free text (messages, error texts, URLs). */
export function redactText(text: string): string {
  let out = text;
  for (const [pattern, replacement] of VALUE_RULES) out = out.replace(pattern, replacement);
  return out;
}

/** A copy of `fields` without sensitive keys and with secret-looking values scrubbed, at any depth. */
export function redactFields(fields: LogFields): LogFields {
  return redactValue(fields, 0, new WeakSet()) as LogFields;
}

function redactValue(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth + 1, seen));
  if (value instanceof Error) {
    // An error's own text may quote a header or a URL; it is scrubbed like any other string.
    return redactValue({ name: value.name, message: value.message, stack: value.stack }, depth, seen);
  }
  if (value instanceof Date) return value.toISOString();
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (!isSensitiveKey(key)) out[key] = redactValue(item, depth + 1, seen);
  }
  return out;
}
