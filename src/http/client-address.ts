import { isIP } from 'node:net';
import { boundedMemo } from '../shared/bounded-memo';

export interface AddressSource {
  /** The X-Forwarded-For header as Node gives it: one string (repeats joined by ", "), an array, or absent. */
  readonly forwardedFor: string | readonly string[] | undefined;
  /** `req.socket.remoteAddress`; absent when the socket is gone. */
  readonly socketAddress: string | undefined;
}

/** What the address is when nothing names one (a closed socket, no header); all such requests share one budget. */
export const UNKNOWN_ADDRESS = 'unknown';

/** No spelling of an IP address (bracketed, with port and zone) is longer; anything longer is not one. */
const MAX_ENTRY_LENGTH = 64;

/**
 * The client's address for per-address limits: always an IP address in
 * canonical text, or UNKNOWN_ADDRESS, never text a client chose.
 *
 * Each proxy appends the address it received the connection from to
 * X-Forwarded-For, so only the right-most `trustedHops` entries were written
 * by proxies we trust; anything left of them is whatever the client sent and
 * can be forged. With `trustedHops` = n the client is the n-th entry from the
 * right (on Cloud Run, n = 1: Google's front end appends the client's address).
 *
 * - 0 hops: the socket address (nothing in front of us, or nothing trusted).
 * - Fewer entries than hops: the left-most entry, the furthest any trusted
 *   proxy got (a misconfiguration, or a request that skipped a proxy).
 * - No header at all: the socket address.
 * - The chosen entry is not an IP address: the socket address. A key made of
 *   the entry's text would let a client that can write it mint a fresh
 *   failed-sign-in budget per spelling; a key for an address parsed out of
 *   junk would let it spend someone else's.
 */
export function clientAddress(source: AddressSource, trustedHops: number): string {
  if (!Number.isSafeInteger(trustedHops) || trustedHops < 0) {
    throw new RangeError(`trustedHops must be a non-negative integer, got ${trustedHops}`);
  }
  const socket = (source.socketAddress === undefined ? undefined : canonicalAddress(source.socketAddress)) ?? UNKNOWN_ADDRESS;
  if (trustedHops === 0) return socket;
  const entries = forwardedEntries(source.forwardedFor);
  if (entries.length === 0) return socket;
  const index = Math.max(0, entries.length - trustedHops);
  return canonicalAddress(entries[index] as string) ?? socket;
}

function forwardedEntries(header: string | readonly string[] | undefined): string[] {
  if (header === undefined) return [];
  const joined = typeof header === 'string' ? header : header.join(',');
  return joined
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
}

// Pure functions of one string, asked on every request of the same few clients (twice a request: the auth budget and the charge plan).
/**
 * Canonical text of one address, or undefined when `raw` is not one.
 * IPv4: dotted decimal ("1.2.3.4"). IPv6: RFC 5952 text ("2001:db8::1"),
 * except that an IPv4-mapped address (::ffff:a.b.c.d, however spelled) is
 * the IPv4 address it maps: a dual-stack socket reports IPv4 clients that way.
 * Accepted around the address: whitespace, brackets, a port, an IPv6 zone
 * index, a trailing dot, leading zeros.
 */
export const canonicalAddress: (raw: string) => string | undefined = boundedMemo(computeCanonicalAddress);

function computeCanonicalAddress(raw: string): string | undefined {
  let value = raw.trim();
  if (value.length === 0 || value.length > MAX_ENTRY_LENGTH) return undefined;
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(value); // "[2001:db8::1]:443", "[2001:db8::1]"
  if (bracketed) return canonicalIpv6(bracketed[1] as string);
  const v4WithPort = /^([\d.]+):\d{1,5}$/.exec(value); // "203.0.113.7:51234"
  if (v4WithPort) value = v4WithPort[1] as string;
  return canonicalIpv4(value) ?? canonicalIpv6(value);
}

/**
 * "1.2.3.4", "1.2.3.4." (a fully qualified spelling) and "01.002.3.4" are one
 * address. Leading zeros are read as decimal, not as inet_aton's octal: the
 * key must be the address the text visibly names, so a forged "010.0.0.1"
 * spends 10.0.0.1's budget (which the forger named) and not 8.0.0.1's
 * (which it did not). Proxies never write either spelling.
 */
function canonicalIpv4(value: string): string | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\.?$/.exec(value);
  if (!match) return undefined;
  const octets = match.slice(1).map((digits) => Number.parseInt(digits, 10));
  return octets.every((octet) => octet <= 255) ? octets.join('.') : undefined;
}

function canonicalIpv6(value: string): string | undefined {
  const address = value.replace(/%[^%]*$/, '').toLowerCase(); // zone index: "fe80::1%eth0"
  if (isIP(address) !== 6) return undefined;
  const groups = expandIpv6(address);
  // Only ::ffff:0:0/96 is IPv4-mapped; "1::ffff:1.2.3.4" is an IPv6 address written with a dotted tail.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [high, low] = [groups[6] as number, groups[7] as number];
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  }
  return compressIpv6(groups);
}

/**
 * The part of an address a per-address limit counts against. IPv4: the
 * address. IPv6: its /64, because one subscriber is usually given a whole /64
 * and could otherwise rotate through 2^64 addresses, each with a fresh budget.
 */
export const addressLimitKeyPart: (address: string) => string = boundedMemo(computeAddressLimitKeyPart);

function computeAddressLimitKeyPart(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = expandIpv6(address.toLowerCase()).slice(0, 4);
  return `${compressIpv6([...groups, 0, 0, 0, 0])}/64`;
}

/** Eight 16-bit groups of a valid IPv6 address; accepts "::" and a trailing dotted IPv4 part. */
function expandIpv6(address: string): number[] {
  let text = address;
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => Number.parseInt(g, 16));
}

/** RFC 5952 text: lower-case hex without leading zeros; the longest run (>= 2) of zero groups becomes "::", left-most on a tie. */
function compressIpv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestLength < 2) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}
