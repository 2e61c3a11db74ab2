import { isIP } from 'node:net';
import fc from 'fast-check';
import { addressLimitKeyPart, canonicalAddress, clientAddress, UNKNOWN_ADDRESS } from '../../src/http/client-address';
import { assertValidKey } from '../../src/library/window/key';
import { authFailureKey } from '../../src/http/auth-middleware';

describe('clientAddress', () => {
  it.each([
    { name: '1 hop: the entry the proxy appended', xff: '203.0.113.7', socket: '10.0.0.1', hops: 1, want: '203.0.113.7' },
    { name: '1 hop: spoofed left-most entries are ignored', xff: '1.1.1.1, 2.2.2.2, 203.0.113.7', socket: '10.0.0.1', hops: 1, want: '203.0.113.7' },
    { name: '2 hops: the second entry from the right', xff: '1.1.1.1, 203.0.113.7, 35.191.0.1', socket: '10.0.0.1', hops: 2, want: '203.0.113.7' },
    { name: 'too few entries: the left-most available', xff: '203.0.113.7', socket: '10.0.0.1', hops: 3, want: '203.0.113.7' },
    { name: 'no header: the socket address', xff: undefined, socket: '10.0.0.1', hops: 1, want: '10.0.0.1' },
    { name: 'an empty header: the socket address', xff: ' , ', socket: '10.0.0.1', hops: 1, want: '10.0.0.1' },
    { name: '0 hops: the socket, whatever the header says', xff: '203.0.113.7', socket: '10.0.0.1', hops: 0, want: '10.0.0.1' },
    { name: 'whitespace around entries', xff: '  1.1.1.1 ,   203.0.113.7   ', socket: '10.0.0.1', hops: 1, want: '203.0.113.7' },
    { name: 'empty entries are skipped', xff: '1.1.1.1,,203.0.113.7,', socket: '10.0.0.1', hops: 1, want: '203.0.113.7' },
    { name: 'IPv6 in canonical form', xff: '1.1.1.1, 2001:DB8:0:0:0:0:0:1', socket: '10.0.0.1', hops: 1, want: '2001:db8::1' },
    { name: 'bracketed IPv6 with a port', xff: '[2001:db8::1]:443', socket: '10.0.0.1', hops: 1, want: '2001:db8::1' },
    { name: 'IPv4 with a port', xff: '203.0.113.7:51234', socket: '10.0.0.1', hops: 1, want: '203.0.113.7' },
    { name: 'IPv4-mapped IPv6 socket address', xff: undefined, socket: '::ffff:127.0.0.1', hops: 1, want: '127.0.0.1' },
    { name: 'no socket and no header', xff: undefined, socket: undefined, hops: 1, want: UNKNOWN_ADDRESS },
    { name: 'a non-address entry: the socket address, not a key of its own', xff: 'unknown-proxy', socket: '10.0.0.1', hops: 1, want: '10.0.0.1' },
    { name: 'an entry over 64 characters, even one that would parse: the socket address', xff: `${'0'.repeat(60)}1.2.3.4`, socket: '10.0.0.1', hops: 1, want: '10.0.0.1' },
    { name: 'an out-of-range octet: the socket address', xff: '256.1.1.1', socket: '10.0.0.1', hops: 1, want: '10.0.0.1' },
    { name: 'five octets: the socket address', xff: '1.2.3.4.5', socket: '10.0.0.1', hops: 1, want: '10.0.0.1' },
    { name: 'a non-address entry with too few entries: the socket address', xff: 'garbage', socket: '10.0.0.1', hops: 3, want: '10.0.0.1' },
    { name: 'a non-address socket with no header', xff: undefined, socket: 'not-an-ip', hops: 1, want: UNKNOWN_ADDRESS },
  ])('$name', ({ xff, socket, hops, want }) => {
    expect(clientAddress({ forwardedFor: xff, socketAddress: socket }, hops)).toBe(want);
  });

  it('reads repeated X-Forwarded-For headers as one list', () => {
    expect(clientAddress({ forwardedFor: ['1.1.1.1', '2.2.2.2, 203.0.113.7'], socketAddress: '10.0.0.1' }, 2)).toBe('2.2.2.2');
  });

  it('refuses a negative hop count', () => {
    expect(() => clientAddress({ forwardedFor: undefined, socketAddress: '10.0.0.1' }, -1)).toThrow(RangeError);
  });
});

describe('addressLimitKeyPart', () => {
  it('keeps IPv4 addresses whole', () => {
    expect(addressLimitKeyPart('203.0.113.7')).toBe('203.0.113.7');
  });

  it('groups IPv6 addresses by /64, so rotating the interface id does not mint a fresh budget', () => {
    expect(addressLimitKeyPart('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(addressLimitKeyPart('2001:db8:1:2::1')).toBe(addressLimitKeyPart('2001:db8:1:2:ffff::9'));
    expect(addressLimitKeyPart('2001:db8:1:3::1')).not.toBe(addressLimitKeyPart('2001:db8:1:2::1'));
  });

  it('gives limiter keys RTDB accepts for every kind of address', () => {
    for (const address of ['203.0.113.7', '2001:db8::1', UNKNOWN_ADDRESS, 'a.b/c$d#e[f]']) {
      expect(() => assertValidKey(authFailureKey(address))).not.toThrow();
    }
  });
});


describe('canonicalAddress', () => {
  it.each([
    { name: 'IPv4 as written', raw: '203.0.113.7', want: '203.0.113.7' },
    { name: 'IPv4 with a trailing dot', raw: '1.2.3.4.', want: '1.2.3.4' },
    { name: 'IPv4 with leading zeros, read as decimal (not octal)', raw: '01.002.010.4', want: '1.2.10.4' },
    { name: 'IPv4 with leading zeros and a port', raw: '001.2.3.4:8080', want: '1.2.3.4' },
    { name: 'IPv4-mapped IPv6, dotted', raw: '::ffff:203.0.113.7', want: '203.0.113.7' },
    { name: 'IPv4-mapped IPv6, upper case', raw: '::FFFF:203.0.113.7', want: '203.0.113.7' },
    { name: 'IPv4-mapped IPv6, uncompressed', raw: '0:0:0:0:0:ffff:203.0.113.7', want: '203.0.113.7' },
    { name: 'IPv4-mapped IPv6, in hex', raw: '::ffff:cb00:7107', want: '203.0.113.7' },
    { name: 'IPv4-mapped IPv6, bracketed with a port', raw: '[::ffff:203.0.113.7]:443', want: '203.0.113.7' },
    { name: 'a dotted tail outside ::ffff:0:0/96 stays IPv6', raw: '1::ffff:1.2.3.4', want: '1::ffff:102:304' },
    { name: 'IPv4-compatible (deprecated) stays IPv6', raw: '::1.2.3.4', want: '::102:304' },
    { name: 'bracketed IPv6 without a port', raw: '[2001:db8::1]', want: '2001:db8::1' },
    { name: 'bracketed IPv6 with a port', raw: '[2001:DB8::1]:443', want: '2001:db8::1' },
    { name: 'IPv6 with leading zeros in groups', raw: '2001:0db8:0000:0000:0000:0000:0000:0001', want: '2001:db8::1' },
    { name: 'RFC 5952 tie: the left-most of two equal zero runs becomes ::', raw: '2001:db8:0:0:1:0:0:1', want: '2001:db8::1:0:0:1' },
    { name: 'RFC 5952: the longer zero run wins over an earlier shorter one', raw: '2001:0:0:1:0:0:0:1', want: '2001:0:0:1::1' },
    { name: 'RFC 5952: a single zero group is not shortened', raw: '2001:db8:0:1:1:1:1:1', want: '2001:db8:0:1:1:1:1:1' },
    { name: 'an IPv6 zone index is dropped', raw: 'fe80::1%eth0', want: 'fe80::1' },
    { name: 'surrounding whitespace', raw: '  203.0.113.7 ', want: '203.0.113.7' },
  ])('$name', ({ raw, want }) => {
    expect(canonicalAddress(raw)).toBe(want);
  });

  it.each([
    { name: 'a word', raw: 'unknown-proxy' },
    { name: 'an empty string', raw: '' },
    { name: 'over 64 characters', raw: `${'0'.repeat(60)}1.2.3.4` },
    { name: 'an octet over 255', raw: '1.2.3.256' },
    { name: 'three octets', raw: '1.2.3' },
    { name: 'hex octets', raw: '0x7f.0.0.1' },
    { name: 'two trailing dots', raw: '1.2.3.4..' },
    { name: 'an IPv6 address with nine groups', raw: '1:2:3:4:5:6:7:8:9' },
    { name: 'a bracketed non-address', raw: '[evil]:80' },
    { name: 'an IPv4 zone index', raw: '1.2.3.4%eth0' },
  ])('refuses $name', ({ raw }) => {
    expect(canonicalAddress(raw)).toBeUndefined();
  });
});

/** Independent oracle: dotted decimal for mapped addresses, else the WHATWG URL parser's (RFC 5952) form. */
function expectedIpv6(groups: readonly number[]): string {
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [high, low] = [groups[6] as number, groups[7] as number];
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  return new URL(`http://[${groups.map((g) => g.toString(16)).join(':')}]/`).hostname.slice(1, -1);
}

const octet = fc.integer({ min: 0, max: 255 });
const port = fc.integer({ min: 1, max: 65535 });
const zeroPadding = fc.integer({ min: 0, max: 2 }).map((n) => '0'.repeat(n));
const ipv4Spelling = (o: readonly number[]) =>
  fc.oneof(
    fc.constant(o.join('.')),
    fc.constant(`${o.join('.')}.`),
    fc.tuple(zeroPadding, zeroPadding, zeroPadding, zeroPadding).map((pad) => o.map((x, i) => `${pad[i]}${x}`).join('.')),
    port.map((p) => `${o.join('.')}:${p}`),
    fc.constant(` ${o.join('.')}\t`),
    fc.constantFrom('::ffff:', '::FFFF:', '0:0:0:0:0:ffff:', '0000::ffff:').map((prefix) => `${prefix}${o.join('.')}`),
    fc.constant(`::ffff:${(((o[0] as number) << 8) | (o[1] as number)).toString(16)}:${(((o[2] as number) << 8) | (o[3] as number)).toString(16)}`),
    port.map((p) => `[::ffff:${o.join('.')}]:${p}`),
  );
// Zero groups are frequent, so zero runs (and ties between them) are exercised.
const group = fc.oneof(fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff }));
const ipv6Spelling = (g: readonly number[]) =>
  fc.oneof(
    fc.constant(g.map((x) => x.toString(16)).join(':')),
    fc.constant(g.map((x) => x.toString(16).padStart(4, '0')).join(':')),
    fc.constant(g.map((x) => x.toString(16).toUpperCase()).join(':')),
    fc.constant(new URL(`http://[${g.map((x) => x.toString(16)).join(':')}]/`).hostname), // bracketed, compressed
    port.map((p) => `[${g.map((x) => x.toString(16)).join(':')}]:${p}`),
    fc.constant(`${g.map((x) => x.toString(16)).join(':')}%eth0`),
  );

describe('one address, one key (properties)', () => {
  const keyOf = (entry: string) => addressLimitKeyPart(clientAddress({ forwardedFor: `198.51.100.1, ${entry}`, socketAddress: '10.0.0.1' }, 1));

  it('every spelling of one IPv4 address gives its dotted-decimal form and one key', () => {
    fc.assert(
      fc.property(
        fc.tuple(octet, octet, octet, octet).chain((o) => fc.tuple(fc.constant(o), ipv4Spelling(o), ipv4Spelling(o))),
        ([o, a, b]) => {
          expect(canonicalAddress(a)).toBe(o.join('.'));
          expect(keyOf(a)).toBe(keyOf(b));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('every spelling of one IPv6 address gives its RFC 5952 form and one key', () => {
    fc.assert(
      fc.property(
        fc.array(group, { minLength: 8, maxLength: 8 }).chain((g) => fc.tuple(fc.constant(g), ipv6Spelling(g), ipv6Spelling(g))),
        ([g, a, b]) => {
          expect(canonicalAddress(a)).toBe(expectedIpv6(g));
          expect(keyOf(a)).toBe(keyOf(b));
        },
      ),
      { numRuns: 500 },
    );
  });

  const socketAddress = fc.oneof(fc.ipV4(), fc.ipV6());
  const header = fc.option(fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 4 })), { nil: undefined });

  it('with 0 trusted hops, no X-Forwarded-For content changes the address', () => {
    fc.assert(
      fc.property(header, socketAddress, (forwardedFor, socket) => {
        expect(clientAddress({ forwardedFor, socketAddress: socket }, 0)).toBe(clientAddress({ forwardedFor: undefined, socketAddress: socket }, 0));
      }),
      { numRuns: 300 },
    );
  });

  it('with n trusted hops, entries left of the n trusted ones never change the address', () => {
    const trustedEntry = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constant('unknown'), fc.constant('[2001:db8::7]:443'));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }).chain((n) => fc.array(trustedEntry, { minLength: n, maxLength: n })),
        fc.array(fc.string(), { maxLength: 5 }),
        fc.boolean(),
        socketAddress,
        (trusted, forged, asSeparateHeaders, socket) => {
          const honest = clientAddress({ forwardedFor: trusted.join(', '), socketAddress: socket }, trusted.length);
          const forwardedFor = asSeparateHeaders ? [forged.join(','), trusted.join(',')] : [...forged, ...trusted].join(', ');
          expect(clientAddress({ forwardedFor, socketAddress: socket }, trusted.length)).toBe(honest);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the address is always an IP address or UNKNOWN_ADDRESS, never text from the header', () => {
    fc.assert(
      fc.property(header, socketAddress, fc.integer({ min: 0, max: 4 }), (forwardedFor, socket, hops) => {
        const address = clientAddress({ forwardedFor, socketAddress: socket }, hops);
        expect(isIP(address) !== 0 || address === UNKNOWN_ADDRESS).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
