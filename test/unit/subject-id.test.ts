import fc from 'fast-check';
import { SUBJECT_ID_PATTERN, subjectCallerId } from '../../src/tokens/subject-id';
import { scopesOf } from '../../src/tokens/jwt-caller-verifier';

describe('subjectCallerId', () => {
  it('is a stable sub_ id of 26 base32 characters that does not contain the subject', () => {
    const id = subjectCallerId('https://securetoken.google.com/p', 'alice@example.com');
    expect(id).toBe(subjectCallerId('https://securetoken.google.com/p', 'alice@example.com'));
    expect(id).toMatch(SUBJECT_ID_PATTERN);
    expect(id).not.toContain('alice');
  });

  it('gives two issuers\' same subject, and shifted separators, different ids', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 }), (a, b, c) => {
        fc.pre(a !== b);
        expect(subjectCallerId(a, c)).not.toBe(subjectCallerId(b, c));
        expect(subjectCallerId(a, c)).toMatch(SUBJECT_ID_PATTERN);
      }),
    );
    expect(subjectCallerId('a\nb', 'c')).not.toBe(subjectCallerId('a', 'b\nc'));
  });
});

describe('scopesOf', () => {
  it.each<[string, Record<string, unknown>, string[]]>([
    ['scope, space-separated (RFC 9068)', { scope: 'mcp read  mcp' }, ['mcp', 'read']],
    ['scp as a list (Okta, Entra)', { scp: ['mcp', 7, 'x'] }, ['mcp', 'x']],
    ['scp as a string', { scp: 'mcp' }, ['mcp']],
    ['neither', {}, []],
    ['scope wins over scp', { scope: 'a', scp: ['b'] }, ['a']],
  ])('%s', (_name, payload, expected) => {
    expect(scopesOf(payload)).toEqual(expected);
  });

  it('keeps at most 64 scopes', () => {
    expect(scopesOf({ scope: Array.from({ length: 500 }, (_, i) => `s${i}`).join(' ') })).toHaveLength(64);
  });
});
