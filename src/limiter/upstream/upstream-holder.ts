import { createHash } from 'node:crypto';

/**
 * Who holds a reservation: the server-verified token id and the tool it is
 * for, never anything the client writes in the call (the tool name is one the
 * gateway found in the upstream's list). At most one reservation per holder.
 *
 * Stored as 16 base64url characters of SHA-256 (96 bits), not the pair
 * itself: every holder costs the same few bytes in a state that is rewritten
 * on every grant, and the shared node does not list which tokens wait for
 * what. The separator cannot occur in a token id, so ("a", "b/c") and
 * ("a/b", "c") never share a holder.
 */
export interface UpstreamCaller {
  /** The token's public id (`tok_...`) from its verified record. */
  readonly tokenId: string;
  readonly tool: string;
}

export function holderIdOf(caller: UpstreamCaller): string {
  return createHash('sha256').update(caller.tokenId).update('\u0000').update(caller.tool).digest('base64url').slice(0, 16);
}
