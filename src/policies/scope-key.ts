import { encodeKeyPart } from '../library';

/**
 * Where each scope's state lives, per token. The tier's limits keep the
 * token id itself (the layout every deployment has); every other scope gets
 * its own key beside it, so its policies never share a stored node with the
 * tier's (an RTDB write replaces the whole node of its key) and a rule's
 * calls are counted apart from the tier's units. `~` never occurs in a token
 * id (tok_ and 16 base32 characters), so no scope key is another token's id.
 * See docs/adr/0027-call-costs-rules-and-scopes.md.
 */
/**
 * A per-address rule's state: one key per rule and client address (already
 * canonicalised, IPv6 per /64), shared by every caller from that address.
 * `ip~` is no token id's prefix (tok_, sub_), so it is no token's scope.
 * An address not known (a call without a request) counts under "unknown",
 * erring towards the limit rather than away from it.
 */
export function addressRuleKeyOf(address: string | undefined, ruleName: string): string {
  return `ip~rule~${encodeKeyPart(ruleName)}~${encodeKeyPart(address ?? 'unknown')}`;
}

/** The key of a rule's limits for this caller: per caller, or per its address. */
export function ruleScopeKeyOf(rule: { readonly name: string; readonly per?: 'caller' | 'address' }, caller: { readonly tokenId: string; readonly address?: string }): string {
  return rule.per === 'address' ? addressRuleKeyOf(caller.address, rule.name) : ruleKeyOf(caller.tokenId, rule.name);
}

export function tierKeyOf(tokenId: string): string {
  return tokenId;
}

export function freeKeyOf(tokenId: string): string {
  return `${tokenId}~free`;
}

export function ruleKeyOf(tokenId: string, ruleName: string): string {
  return `${tokenId}~rule~${encodeKeyPart(ruleName)}`;
}

export function toolKeyOf(tokenId: string, tool: string): string {
  return `${tokenId}~tool~${encodeKeyPart(tool)}`;
}

/** A shadow override's own key: it never touches the state of the limits it shadows. */
export function shadowKeyOf(tokenId: string, tool: string | undefined): string {
  return tool === undefined ? `${tokenId}~shadow` : `${tokenId}~shadow~tool~${encodeKeyPart(tool)}`;
}
