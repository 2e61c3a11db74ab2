import { isIP } from 'node:net';

export interface AddressSource {
  /** The X-Forwarded-For header as Node gives it: one string (repeats joined by ", "), an array, or absent. */
  readonly forwardedFor: string | readonly string[] | undefined;
  /** `req.socket.remoteAddress`; absent when the socket is gone. */
  readonly socketAddress: string | undefined;
}

/** What the address is when nothing names one (a closed socket, no header); all such requests share one budget. */
export const UNKNOWN_ADDRESS = 'unknown';

/** Longer entries are not addresses; they are cut so a key stays small. */
const MAX_ENTRY_LENGTH = 64;

/**
 * The client's address for per-address limits.
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
 * Entries are normalised (whitespace, brackets, ports, IPv4-mapped IPv6,
 * case), so one client cannot appear as several addresses.
 */
export function clientAddress(source: AddressSource, trustedHops: number): string {
  if (!Number.isSafeInteger(trustedHops) || trustedHops < 0) {
    throw new RangeError(`trustedHops must be a non-negative integer, got ${trustedHops}`);
  }
  const socket = source.socketAddress === undefined ? UNKNOWN_ADDRESS : normaliseAddress(source.socketAddress);
  if (trustedHops === 0) return socket;
  const entries = forwardedEntries(source.forwardedFor);
  if (entries.length === 0) return socket;
  const index = Math.max(0, entries.length - trustedHops);
  return normaliseAddress(entries[index] as string);
}

function forwardedEntries(header: string | readonly string[] | undefined): string[] {
  if (header === undefined) return [];
  const joined = typeof header === 'string' ? header : header.join(',');
  return joined
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
}

/** Canonical text of one address: "1.2.3.4", "2001:db8::1"; a non-address is kept (trimmed, cut) as its own key. */
export function normaliseAddress(raw: string): string {
  let value = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value); // "[2001:db8::1]:443"
  if (bracketed) value = bracketed[1] as string;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(value); // "203.0.113.7:51234"
  if (v4WithPort) value = v4WithPort[1] as string;
  value = value.replace(/%[^%]*$/, ''); // zone index: "fe80::1%eth0"
  if (isIP(value) === 6) {
    value = value.toLowerCase();
    const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(value);
    if (mapped && isIP(mapped[1] as string) === 4) return mapped[1] as string;
    return compressIpv6(expandIpv6(value));
  }
  if (isIP(value) === 4) return value;
  return raw.trim().slice(0, MAX_ENTRY_LENGTH) || UNKNOWN_ADDRESS;
}

/**
 * The part of an address a per-address limit counts against. IPv4: the
 * address. IPv6: its /64, because one subscriber is usually given a whole /64
 * and could otherwise rotate through 2^64 addresses, each with a fresh budget.
 */
export function addressLimitKeyPart(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = expandIpv6(address.toLowerCase()).slice(0, 4);
  return `${compressIpv6([...groups, '0', '0', '0', '0'])}/64`;
}

/** Eight hex groups without leading zeros; accepts "::" and a trailing dotted IPv4 part. */
function expandIpv6(address: string): string[] {
  let text = address;
  const v4 = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (v4) {
    const octets = (v4[1] as string).split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((octets[0] << 8) | octets[1]).toString(16)}:${((octets[2] << 8) | octets[3]).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => Number.parseInt(g, 16).toString(16));
}

/** RFC 5952 text: the longest run (>= 2) of zero groups becomes "::", left-most on a tie. */
function compressIpv6(groups: readonly string[]): string {
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === '0') j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  if (bestLength < 2) return groups.join(':');
  return `${groups.slice(0, bestStart).join(':')}::${groups.slice(bestStart + bestLength).join(':')}`;
}
