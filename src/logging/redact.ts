import type { LogFields } from '../shared/logger';

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
  // A JWT (an ID or access token of a signed-in caller, ADR 0054) anywhere: its header is base64url JSON, so "eyJ".
  [/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, `jwt:${REDACTED}`],
  // user:password@ in any URL (a Redis or database URL pasted into an error message).
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, `$1${REDACTED}@`],
  // A SHA-256 in hex is how token secrets are stored; trace ids are 32 hex, span ids 16, so 64 is unambiguous.
  // Bounded by non-hex rather than \b: `_` is a word character, and `x=<hash>_y` must not slip through.
  [/(?<![0-9a-f])[0-9a-f]{64,}(?![0-9a-f])/gi, REDACTED],
];

/**
 * Runs of URL-ish text; the ones holding a percent escape are decoded, since
 * `flk%5F...` is the same secret to whoever reads the log. Matched run by run
 * and tested apart (not one pattern with `%` in its middle), which keeps a
 * long run without an escape linear instead of quadratic.
 */
const TEXT_RUN = /[^\s"'<>]+/g;
const PERCENT_ESCAPE = /%[0-9a-f]{2}/i;

/** Enough for double and triple encoding; a client that encodes more is not hiding a secret from us by accident. */
const MAX_DECODE_ROUNDS = 4;

/** Field names recur on every line; their verdicts are kept, up to a bound a caller naming keys from input cannot grow past. */
const KEY_VERDICTS = new Map<string, boolean>();
const MAX_KEY_VERDICTS = 1024;

export function isSensitiveKey(key: string): boolean {
  const known = KEY_VERDICTS.get(key);
  if (known !== undefined) return known;
  const verdict = !PUBLIC_KEYS.has(key) && SENSITIVE_KEY.test(key);
  if (KEY_VERDICTS.size < MAX_KEY_VERDICTS) KEY_VERDICTS.set(key, verdict);
  return verdict;
}

/**
 * Masks secret-looking substrings of free text (messages, error texts, URLs),
 * in their percent-decoded forms too: a percent-encoded run that hides a
 * secret is logged decoded and masked, the rest as it was.
 */
export function redactText(text: string): string {
  const decodedRuns = text.includes('%')
    ? text.replace(TEXT_RUN, (run) => {
        if (!PERCENT_ESCAPE.test(run)) return run;
        const decoded = decodeForLog(run);
        const masked = applyValueRules(decoded);
        return masked === decoded ? run : escapeForLog(masked, /[^\x21-\x7e]/gu);
      })
    : text;
  return applyValueRules(decodedRuns);
}

/**
 * One component of a URL (a path segment, a query key or value) as it may be
 * logged: as it came when its decoded form holds no secret, else decoded with
 * the secret masked, and re-escaped so it cannot pass for URL structure
 * (`/ ? & = #`) or put a control character in a log line.
 */
export function redactUrlComponent(raw: string): string {
  if (!raw.includes('%')) return applyValueRules(raw);
  const decoded = decodeForLog(raw);
  const masked = applyValueRules(decoded);
  if (masked === decoded && applyValueRules(raw) === raw) return raw;
  return escapeForLog(masked, /[^\x21-\x7e]|[/?&=#]/gu);
}

/**
 * Percent-decoded until stable (at most MAX_DECODE_ROUNDS). Malformed escapes
 * and invalid UTF-8 stay as they are, rather than making the whole text
 * undecodable.
 */
export function decodeForLog(text: string): string {
  let out = text;
  for (let round = 0; round < MAX_DECODE_ROUNDS && out.includes('%'); round++) {
    const next = out.replace(/(?:%[0-9a-f]{2})+/gi, (escapes) => {
      try {
        return decodeURIComponent(escapes);
      } catch {
        return escapes;
      }
    });
    if (next === out) break;
    out = next;
  }
  return out;
}

/** Something every VALUE_RULES match contains; most log text has none, and is spared the four replaces. */
const MAYBE_SECRET = /flk_|bearer|basic|:\/\/|eyJ|[0-9a-f]{64}/i;

function applyValueRules(text: string): string {
  if (!MAYBE_SECRET.test(text)) return text;
  let out = text;
  for (const [pattern, replacement] of VALUE_RULES) out = out.replace(pattern, replacement);
  return out;
}

function escapeForLog(text: string, unsafe: RegExp): string {
  return text.replace(unsafe, (c) => encodeURIComponent(c));
}

/** A copy of `fields` without sensitive keys and with secret-looking values scrubbed, at any depth. */
export function redactFields(fields: LogFields): LogFields {
  // Left as it was by a walk that threw (a getter of a logged object): start clean.
  ANCESTORS.length = 0;
  return redactValue(fields, 0) as LogFields;
}

/**
 * The objects from the root down to the one being copied: a value among them
 * is a cycle. An array of at most MAX_DEPTH, reused (the walk is synchronous
 * and never re-entered), instead of a WeakSet per line: that was an
 * allocation and an ephemeron table for the collector on every request log.
 */
const ANCESTORS: object[] = [];

function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (ANCESTORS.includes(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  ANCESTORS.push(value);
  const copy = redactedCopy(value, depth);
  ANCESTORS.pop();
  return copy;
}

function redactedCopy(value: object, depth: number): unknown {
  if (Array.isArray(value)) return value.map((item) => redactValue(item, depth + 1));
  if (value instanceof Error) {
    // An error's own text may quote a header or a URL; it is scrubbed like any other string.
    return redactValue({ name: value.name, message: value.message, stack: value.stack }, depth);
  }
  if (value instanceof Date) return value.toISOString();
  const out: Record<string, unknown> = {};
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const item = record[key];
    // What JSON leaves out needs no copy; strings, numbers and booleans need no recursion.
    if (item === undefined || isSensitiveKey(key)) continue;
    out[key] = typeof item === 'string' ? redactText(item) : typeof item === 'object' && item !== null ? redactValue(item, depth + 1) : item;
  }
  return out;
}
