/**
 * A single linear pass over a raw JSON body that measures what JSON.parse and
 * zod would otherwise pay for in CPU and stack: how deep it nests and, when it
 * is a top-level array (a JSON-RPC batch), how many entries it has. It stops
 * at the first bound it passes, so a 1 MB `[[[[...` costs as many bytes as the
 * bound, not a parse.
 *
 * It does not validate JSON. It only tracks whether it is inside a string
 * (and after a backslash there), so brackets and commas in strings do not
 * count; JSON.parse still rejects whatever is malformed afterwards. On valid
 * JSON its figures equal those computed from the parsed value
 * (test/unit/json-structure-scan.test.ts holds it to that). Bytes, not
 * characters: every structural byte of JSON is ASCII, and no byte of a
 * multi-byte UTF-8 sequence is below 0x80, so decoding first is not needed.
 */

export interface JsonStructureLimits {
  /** Deepest nesting of arrays and objects allowed; `[]` is depth 1. */
  readonly maxDepth: number;
  /** Most entries a top-level array (a JSON-RPC batch) may hold. */
  readonly maxBatchMessages: number;
}

export type JsonStructureScan =
  | {
      readonly ok: true;
      /** Deepest nesting seen: 0 for a scalar, 1 for `[]` or `{}`. */
      readonly depth: number;
      /** Entries of the top-level array, or undefined when the body is not one. */
      readonly batchLength: number | undefined;
    }
  | { readonly ok: false; readonly problem: 'too_deep'; readonly maxDepth: number }
  | { readonly ok: false; readonly problem: 'batch_too_large'; readonly maxBatchMessages: number };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

/** No limits: the figures alone (for tests and diagnostics). */
export const UNBOUNDED: JsonStructureLimits = { maxDepth: Number.POSITIVE_INFINITY, maxBatchMessages: Number.POSITIVE_INFINITY };

export function scanJsonStructure(bytes: Uint8Array, limits: JsonStructureLimits): JsonStructureScan {
  let depth = 0;
  let maxDepthSeen = 0;
  let inString = false;
  let escaped = false;
  let topIsArray: boolean | undefined;
  // Commas directly inside the top-level array, and whether anything but whitespace is in it.
  let topCommas = 0;
  let topHasEntry = false;

  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    if (inString) {
      if (escaped) escaped = false;
      else if (byte === BACKSLASH) escaped = true;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (topIsArray === undefined && !isWhitespace(byte)) topIsArray = byte === OPEN_ARRAY;
    if (depth === 1 && topIsArray === true && !isWhitespace(byte) && byte !== CLOSE_ARRAY) topHasEntry = true;

    switch (byte) {
      case QUOTE:
        inString = true;
        break;
      case OPEN_ARRAY:
      case OPEN_OBJECT:
        depth++;
        if (depth > maxDepthSeen) {
          maxDepthSeen = depth;
          if (depth > limits.maxDepth) return { ok: false, problem: 'too_deep', maxDepth: limits.maxDepth };
        }
        break;
      case CLOSE_ARRAY:
      case CLOSE_OBJECT:
        // Unbalanced closers are JSON.parse's to report; never let depth go negative and miscount.
        if (depth > 0) depth--;
        break;
      case COMMA:
        if (depth === 1 && topIsArray === true) {
          topCommas++;
          // n commas separate n + 1 entries.
          if (topCommas + 1 > limits.maxBatchMessages) {
            return { ok: false, problem: 'batch_too_large', maxBatchMessages: limits.maxBatchMessages };
          }
        }
        break;
      default:
        break;
    }
  }

  const batchLength = topIsArray === true ? (topHasEntry ? topCommas + 1 : 0) : undefined;
  if (batchLength !== undefined && batchLength > limits.maxBatchMessages) {
    return { ok: false, problem: 'batch_too_large', maxBatchMessages: limits.maxBatchMessages };
  }
  return { ok: true, depth: maxDepthSeen, batchLength };
}

function isWhitespace(byte: number): boolean {
  // JSON's four (RFC 8259 §2); a UTF-8 BOM is JSON.parse's to refuse.
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}

/**
 * The deepest /mcp body accepted. An MCP message nests about 3 levels before
 * a tool's own arguments begin (message -> params -> arguments), 4 in a
 * batch, and the deepest the SDK itself sends (initialize capabilities) is
 * about 5; 64 leaves tool arguments some 60 levels, more than any schema we
 * or an upstream publish, while keeping JSON.parse and zod's recursion
 * trivially shallow. Deeper than this is an attack, not a tool call.
 */
export const MAX_JSON_DEPTH = 64;
