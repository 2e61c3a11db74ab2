import fc from 'fast-check';
import { createHash } from 'node:crypto';
import {
  generateToken,
  generateTokenId,
  hashesEqual,
  hashSecret,
  isWellFormedHash,
  isWellFormedSecret,
  isWellFormedTokenId,
} from '../../src/tokens/token-secret';
import { assertValidKey } from '../../src/library/window/key';

describe('generateToken', () => {
  it('makes a flk_ secret of 32 random bytes in base64url and a tok_ id', () => {
    const { id, secret, secretHash } = generateToken();
    expect(secret).toMatch(/^flk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice(4), 'base64url')).toHaveLength(32);
    expect(id).toMatch(/^tok_[0-9a-z]{16}$/);
    expect(secretHash).toBe(createHash('sha256').update(secret).digest('hex'));
  });

  it('does not put the id in the secret', () => {
    const { id, secret } = generateToken();
    expect(secret).not.toContain(id.slice(4));
  });

  it('never repeats secrets or ids over many draws', () => {
    const secrets = new Set<string>();
    const ids = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const t = generateToken();
      secrets.add(t.secret);
      ids.add(t.id);
    }
    expect(secrets.size).toBe(2000);
    expect(ids.size).toBe(2000);
  });

  it('makes ids that are valid rate-limit keys and pass the id check, for any random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 10, maxLength: 10 }), (bytes) => {
        const id = generateTokenId(() => Buffer.from(bytes));
        expect(() => assertValidKey(id)).not.toThrow();
        expect(isWellFormedTokenId(id)).toBe(true);
      }),
    );
  });

  it('makes secrets that pass the format check, for any random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const { secret } = generateToken(() => Buffer.from(bytes));
        expect(isWellFormedSecret(secret)).toBe(true);
      }),
    );
  });
});

describe('isWellFormedSecret', () => {
  const good = generateToken().secret;
  it.each([
    ['an empty string', ''],
    ['the prefix alone', 'flk_'],
    ['a wrong prefix', `tok_${good.slice(4)}`],
    ['one character short', good.slice(0, -1)],
    ['one character long', `${good}A`],
    ['standard base64 characters (+/)', `flk_${'+'.repeat(43)}`],
    ['padding', `${good.slice(0, -1)}=`],
    ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc'],
    ['surrounding whitespace', ` ${good} `],
    ['a very long value', `flk_${'a'.repeat(100_000)}`],
  ])('rejects %s', (_name, value) => {
    expect(isWellFormedSecret(value)).toBe(false);
  });

  it('accepts a generated secret', () => {
    expect(isWellFormedSecret(good)).toBe(true);
  });
});

describe('hashSecret and hashesEqual', () => {
  it('hashes to lowercase hex SHA-256', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(isWellFormedHash(hashSecret('abc'))).toBe(true);
  });

  it('says equal hashes are equal and different ones are not', () => {
    const a = hashSecret('a');
    expect(hashesEqual(a, hashSecret('a'))).toBe(true);
    expect(hashesEqual(a, hashSecret('b'))).toBe(false);
  });

  it.each([
    ['a shorter value', 'abc'],
    ['upper-case hex', hashSecret('a').toUpperCase()],
    ['non-hex of the right length', 'z'.repeat(64)],
    ['empty', ''],
  ])('answers false (without throwing) for %s', (_name, other) => {
    expect(hashesEqual(hashSecret('a'), other)).toBe(false);
    expect(hashesEqual(other, hashSecret('a'))).toBe(false);
  });
});
