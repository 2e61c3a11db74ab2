import type { TokenRecord } from './token-record';
import { CorruptTokenRecordError, parseTokenRecord } from './token-record-schema';

/** One parse of the token file: the records in file order, and indexes by hash and by id. */
export interface TokenFileIndex {
  readonly records: readonly TokenRecord[];
  readonly byHash: ReadonlyMap<string, TokenRecord>;
  readonly byId: ReadonlyMap<string, TokenRecord>;
}

export const EMPTY_TOKEN_FILE_INDEX: TokenFileIndex = { records: [], byHash: new Map(), byId: new Map() };

/**
 * Parses the token file's text, refusing anything but a well-formed file of
 * valid records with unique ids and unique hashes. Errors name `filePath` and
 * what is wrong (where the JSON breaks, which record and field), never a value:
 * the file holds hashes.
 *
 * Refusing, rather than skipping, the bad part: a file read as emptier than it
 * is would reject good tokens, and the next write would erase them. Two
 * records with one hash would make the winner an accident of file order.
 */
export function parseTokenFile(text: string, filePath: string): TokenFileIndex {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CorruptTokenRecordError(filePath, `${jsonSyntaxReason(error, text)}; fix or remove the file (tokens in it are lost if removed)`);
  }
  const tokens = (json as { tokens?: unknown } | null)?.tokens;
  if (typeof json !== 'object' || json === null || Array.isArray(json) || !Array.isArray(tokens)) {
    throw new CorruptTokenRecordError(filePath, 'not a firelimit token file (expected {"version":1,"tokens":[...]})');
  }
  const records: TokenRecord[] = [];
  const byHash = new Map<string, TokenRecord>();
  const byId = new Map<string, TokenRecord>();
  const indexOfHash = new Map<string, number>();
  const indexOfId = new Map<string, number>();
  tokens.forEach((value: unknown, i: number) => {
    const record = parseTokenRecord(value, `${filePath} tokens[${i}]`);
    const sameId = indexOfId.get(record.id);
    if (sameId !== undefined) {
      throw new CorruptTokenRecordError(`${filePath} tokens[${i}]`, `duplicate id ${record.id}, also at tokens[${sameId}]; neither is used until one is removed`);
    }
    const sameHash = indexOfHash.get(record.secretHash);
    if (sameHash !== undefined) {
      // The hash itself stays out of the message; the two indexes are enough to find the pair.
      throw new CorruptTokenRecordError(`${filePath} tokens[${i}]`, `same secretHash as tokens[${sameHash}]; neither is used until one is removed`);
    }
    indexOfId.set(record.id, i);
    indexOfHash.set(record.secretHash, i);
    records.push(record);
    byId.set(record.id, record);
    byHash.set(record.secretHash, record);
  });
  return { records, byHash, byId };
}

/**
 * Where and why JSON.parse failed, as "line L column C". V8 gives no
 * structured position, only a message; the message's own wording is used
 * only through these known shapes, because some V8 messages quote a slice of
 * the input, and this input holds hashes.
 */
export function jsonSyntaxReason(error: unknown, text: string): string {
  const message = error instanceof Error ? error.message : '';
  if (/^Unexpected end of JSON input/.test(message) || text.trim() === '') {
    return `JSON syntax error: the file ends early (${lineAndColumn(text, text.length)})`;
  }
  // No quote in the phrase: V8's positioned messages ("Expected ',' or '}' after property value") quote nothing.
  const positioned = /^([^"]{1,80}?) in JSON at position (\d+)/.exec(message);
  if (positioned !== null) {
    return `JSON syntax error at ${lineAndColumn(text, Number(positioned[2]))}: ${positioned[1]}`;
  }
  // This one comes without a position, and with a slice of the input that is left out.
  const token = /^Unexpected token '(.)'/u.exec(message);
  if (token !== null) return `JSON syntax error: unexpected character ${JSON.stringify(token[1])}`;
  return 'JSON syntax error';
}

/** 1-based, as editors number them. */
function lineAndColumn(text: string, position: number): string {
  const before = text.slice(0, Math.max(0, Math.min(position, text.length)));
  const lines = before.split('\n');
  return `line ${lines.length} column ${(lines.at(-1)?.length ?? 0) + 1}`;
}
