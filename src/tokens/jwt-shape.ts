/** Longer than any real ID or access token (Firebase's are about 1 KiB); a longer credential is refused unparsed. */
export const MAX_JWT_CHARS = 8_192;
// Three base64url parts (JWS compact serialization); a JWE (five parts) or anything else is not a token we verify.
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Cheap shape check before anything is decoded: size first, then the
 * three-part form. Apart from the verifier so that routing a credential
 * never loads jose (an ES module) in a deployment without issuers.
 */
export function isJwtShaped(credential: string): boolean {
  return credential.length <= MAX_JWT_CHARS && JWS_COMPACT.test(credential);
}
