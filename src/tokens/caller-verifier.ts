import type { AuthenticatedToken, CachedVerdict, TokenVerifier } from './token-record';
import { isWellFormedSecret } from './token-secret';
import { isJwtShaped } from './jwt-shape';

/**
 * The one verifier the auth middleware calls: `flk_` secrets go to the token
 * store's verifier, JWTs (when issuers are configured) to the JWT verifier.
 * The two shapes cannot overlap (a secret has no dots), so nothing is tried
 * twice, and each failure reaches the middleware's one failure accounting.
 */
export interface CallerVerifier extends TokenVerifier {
  /** Could this credential be verified at all (not garbage)? A malformed one is refused unparsed. */
  isWellFormed(credential: string): boolean;
}

export function createCallerVerifier(tokens: TokenVerifier, jwt: TokenVerifier | undefined): CallerVerifier {
  const route = (credential: string): TokenVerifier | undefined =>
    isWellFormedSecret(credential) ? tokens : jwt !== undefined && isJwtShaped(credential) ? jwt : undefined;
  return {
    isWellFormed: (credential) => route(credential) !== undefined,
    verify: async (credential): Promise<AuthenticatedToken | undefined> => route(credential)?.verify(credential),
    peek: (credential): CachedVerdict => route(credential)?.peek(credential) ?? { kind: 'invalid' },
  };
}
