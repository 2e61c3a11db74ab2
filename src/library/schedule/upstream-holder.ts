import { createHash } from 'node:crypto';

/**
 * Who holds a reservation: the server-verified token id, never anything the
 * client writes in the call. One holder per token on each quota key, across
 * every tool and method, so a token's fair share (maxReservationsPerHolder)
 * holds whatever it calls (docs/adr/0053-one-slot-per-call.md); until issue
 * 17 it was the token and the tool, and one token held a slot per tool.
 *
 * Stored as 16 base64url characters of SHA-256 (96 bits), not the token id
 * itself: every holder costs the same few bytes in a state that is rewritten
 * on every grant, and the shared node does not list which tokens wait.
 */
export interface UpstreamCaller {
  /** The token's public id (`tok_...`) from its verified record. */
  readonly tokenId: string;
  /** What is called, for logs and tests; it does not change the holder. */
  readonly tool?: string;
  /**
   * The slot on this quota key the call says it was given (decoded from the
   * reservation id it echoes), if any. It selects among the token's own
   * reservations only.
   */
  readonly claimSlotAtMs?: number;
}

export function holderIdOf(caller: UpstreamCaller): string {
  return createHash('sha256').update(caller.tokenId).digest('base64url').slice(0, 16);
}
