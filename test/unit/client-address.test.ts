import fc from 'fast-check';
import { addressLimitKeyPart, clientAddress, normaliseAddress, UNKNOWN_ADDRESS } from '../../src/http/client-address';
import { assertValidKey } from '../../src/limiter/key';
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

describe('normaliseAddress', () => {
  it('keeps a non-address entry as its own, bounded, key', () => {
    expect(normaliseAddress('unknown-proxy')).toBe('unknown-proxy');
    expect(normaliseAddress('x'.repeat(1000))).toHaveLength(64);
  });

  it('strips an IPv6 zone index', () => {
    expect(normaliseAddress('fe80::1%eth0')).toBe('fe80::1');
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

describe('IPv6 normalisation', () => {
  it('matches the WHATWG URL canonical form for any IPv6 address (one client, one key)', () => {
    fc.assert(
      fc.property(fc.ipV6(), (address) => {
        const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
        fc.pre(!canonical.startsWith('::ffff:'));
        expect(normaliseAddress(address)).toBe(canonical);
        expect(normaliseAddress(address.toUpperCase())).toBe(canonical);
      }),
      { numRuns: 500 },
    );
  });
});
