/**
 * The reasons auth turns a request away: in the client's `error.data.reason`,
 * in logs, and as the only label values of `firelimit_auth_refusals_total`.
 */

/** Why a request was not authenticated (401). */
export type AuthFailureReason = 'missing_token' | 'malformed_token' | 'invalid_token';

/** Every way auth turns a request away. */
export type AuthRefusalReason = AuthFailureReason | 'repeated_invalid_token' | 'auth_failures' | 'unauthenticated_limit' | 'insufficient_scope' | 'store_unavailable' | 'sign_in_busy';
