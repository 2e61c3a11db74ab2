import { z } from 'zod';
import type { AuthenticatedToken, TokenRecord } from './token-record';

/** Scope names: short, no spaces or commas (the CLI splits on commas; WWW-Authenticate quotes them). */
export const SCOPE_PATTERN = /^[A-Za-z0-9:._-]{1,64}$/;

export const MAX_TOKEN_NAME_LENGTH = 200;

/**
 * What a stored record must look like. Both stores read data that someone
 * else may have edited (a hand-edited JSON file, the Firestore console), so a
 * record is checked on the way in instead of trusted.
 */
const tokenRecordSchema = z.object({
  id: z.string().regex(/^tok_[A-Za-z0-9_-]{1,64}$/),
  name: z.string().min(1).max(MAX_TOKEN_NAME_LENGTH),
  tier: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  scopes: z.array(z.string().regex(SCOPE_PATTERN)),
  secretHash: z.string().regex(/^[0-9a-f]{64}$/),
  createdAtMs: z.number().int().nonnegative(),
  revokedAtMs: z.number().int().nonnegative().nullable(),
});

export const CORRUPT_TOKEN_RECORD = 'ERR_FIRELIMIT_CORRUPT_TOKEN_RECORD';

/**
 * Thrown when stored data is not a token record. `where` names the source
 * (a file path and record index, a Firestore document) and `reason` what is
 * wrong with it, both fit for a log line: neither ever quotes a value, so no
 * hash reaches a log through them.
 */
export class CorruptTokenRecordError extends Error {
  readonly code = CORRUPT_TOKEN_RECORD;
  override readonly name = 'CorruptTokenRecordError';
  constructor(
    readonly where: string,
    readonly reason: string,
  ) {
    super(`${where}: ${reason}`);
  }
}

export function parseTokenRecord(value: unknown, where: string): TokenRecord {
  const parsed = tokenRecordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || '(record)';
    // zod's messages name the expected shape, never the input.
    throw new CorruptTokenRecordError(where, `invalid token record, field ${field}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/** A record without its hash: what list output and handlers may see. */
export type TokenSummary = Omit<TokenRecord, 'secretHash'>;

export function summarise(record: TokenRecord): TokenSummary {
  return {
    id: record.id,
    name: record.name,
    tier: record.tier,
    scopes: [...record.scopes],
    createdAtMs: record.createdAtMs,
    revokedAtMs: record.revokedAtMs,
  };
}

export function toAuthenticatedToken(record: TokenRecord): AuthenticatedToken {
  return Object.freeze({ id: record.id, name: record.name, tier: record.tier, scopes: Object.freeze([...record.scopes]) });
}
