/** Shorter than this, a configured "secret" would mask ordinary words; such a value is still never sent on purpose. */
const MIN_SECRET_CHARS = 8;
const MAX_MESSAGE_CHARS = 200;
const REDACTED = '[redacted]';

/** A scheme's credential, whatever the upstream echoed it as. */
const CREDENTIAL = /\b(Bearer|Basic|ApiKey|Token)\s+[^\s,;"']+/gi;
/** A file path with at least two segments (a stack's or a config's): /srv/app/x.js, C:\app\x.js, file:///... */
const PATH = /(?:file:\/\/)?(?:[A-Za-z]:)?(?:[\\/][\w.@-]+){2,}(?::\d+){0,2}/g;
/** What starts a stack trace inside a single line: "    at fn (...)" or "Error: ... at Object.<anonymous>". */
const STACK_FRAME = /\s+at\s+(?:[\w$.<>[\]]+\s+)?\(?.*$/;

/**
 * The secrets an upstream could echo back: the configured Authorization value
 * and its credential after the scheme (the same pair the log masks, ADR 0034).
 */
export function secretsOfUpstreamAuthorization(authorization: string | undefined): string[] {
  if (authorization === undefined) return [];
  const credential = /^\S+\s+(\S.*)$/.exec(authorization)?.[1];
  return [authorization, credential].filter((s): s is string => s !== undefined && s.length >= MIN_SECRET_CHARS).sort((a, b) => b.length - a.length);
}

/**
 * The part of an upstream's error message a caller may read, for errors
 * about the caller's own request (unknown tool, bad params): the first line,
 * without the SDK's "MCP error -N:" prefix, with no stack frame, no file path,
 * no credential (the configured one by value, any scheme's by shape), clipped.
 * The upstream's words are never passed on verbatim: this is what remains.
 */
export function callerFacingText(message: string, secrets: readonly string[]): string {
  let text = message.replace(/^MCP error -?\d+:\s*/, '');
  for (const secret of secrets) text = text.split(secret).join(REDACTED);
  text = text.split(/\r?\n/)[0] ?? '';
  text = text.replace(STACK_FRAME, '').replace(CREDENTIAL, `$1 ${REDACTED}`).replace(PATH, '[path]').trim();
  return text.length <= MAX_MESSAGE_CHARS ? text : `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}
