/**
 * A header value without the spaces and tabs (RFC 9110's optional
 * whitespace, OWS) at either end: what the MCP SDK's classifier compares
 * (`stripHttpOws`). The value itself when there is none to strip, so a
 * caller may ask `stripOws(v) !== v` for "it has some".
 */
export function stripOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isOws(value.charCodeAt(start))) start++;
  while (end > start && isOws(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

function isOws(code: number): boolean {
  return code === 0x20 || code === 0x09;
}
