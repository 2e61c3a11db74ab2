import { jsonSyntaxReason, parseTokenFile } from '../../src/tokens/token-file-index';
import { CorruptTokenRecordError } from '../../src/tokens/token-record-schema';

const HASH = 'ab'.repeat(32);

function reasonFor(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return jsonSyntaxReason(error, text);
  }
  throw new Error('expected invalid JSON');
}

describe('jsonSyntaxReason', () => {
  it('gives line and column where V8 gives a position', () => {
    expect(reasonFor('{"version":1,\n  "tokens":[1 2]}')).toBe("JSON syntax error at line 2 column 15: Expected ',' or ']' after array element");
    expect(reasonFor('{"a":1,}')).toBe('JSON syntax error at line 1 column 8: Expected double-quoted property name');
  });

  it('names the unexpected character where V8 gives no position', () => {
    expect(reasonFor('{"tokens":[}')).toBe('JSON syntax error: unexpected character "}"');
  });

  it('never repeats the slice of input some V8 messages quote, which may hold a hash', () => {
    const text = `{"secretHash": ${HASH}}`;
    const reason = reasonFor(text);
    expect(reason).not.toContain(HASH.slice(0, 8));
    expect(reason).toMatch(/^JSON syntax error/);
  });

  it('says where a truncated file ends', () => {
    expect(reasonFor('{"tokens":[\n')).toBe('JSON syntax error: the file ends early (line 2 column 1)');
    expect(reasonFor('')).toBe('JSON syntax error: the file ends early (line 1 column 1)');
  });
});

describe('parseTokenFile', () => {
  it('refuses JSON that is not a token file, naming the file', () => {
    for (const text of ['[]', 'null', '{"version":1}', '{"tokens":{}}']) {
      expect(() => parseTokenFile(text, '/x/tokens.json')).toThrow(new CorruptTokenRecordError('/x/tokens.json', 'not a firelimit token file (expected {"version":1,"tokens":[...]})'));
    }
  });
});
