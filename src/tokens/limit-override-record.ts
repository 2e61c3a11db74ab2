import { z } from 'zod';
import { ALGORITHM_NAMES, type AlgorithmName, assertValidPolicySet, type RateLimitPolicy } from '../library';
import { overrideIdOf, type LimitOverride, type OverrideTarget } from '../policies/limit-override';
import { TOOL_NAME } from '../library/mcp';
import { MAX_LIMIT, MAX_WINDOW_MS } from '../config/limit-schema';

/** The latest instant a JavaScript Date holds (8.64e15 ms, in the year 275760): past it, toISOString throws "Invalid time value". */
export const MAX_TIME_MS = 8_640_000_000_000_000;

/**
 * A runtime override as stored (a file beside TOKENS_FILE, or one Firestore
 * document): the same shape in both, checked on every read so a hand edit
 * cannot put a limit in force that the command line would have refused.
 */
export interface LimitOverrideRecord {
  /** overrideIdOf(target): one record per target. */
  readonly id: string;
  readonly target: OverrideTarget;
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly windowMs: number;
  readonly burst?: number;
  readonly shadow: boolean;
  readonly setAtMs: number;
  readonly expiresAtMs: number | null;
}

const targetSchema = z
  .object({
    tokenId: z.string().regex(/^(?:tok|sub)_[A-Za-z0-9]{1,64}$/).optional(),
    tier: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).optional(),
    tool: z.string().regex(TOOL_NAME).optional(),
  })
  .strict()
  .refine((t) => t.tokenId !== undefined || t.tier !== undefined || t.tool !== undefined, { error: 'a target names a token, a tier or a tool' })
  .refine((t) => t.tokenId === undefined || t.tier === undefined, { error: 'a target names a token or a tier, not both' });

const recordSchema = z
  .object({
    id: z.string(),
    target: targetSchema,
    algorithm: z.enum(ALGORITHM_NAMES as [AlgorithmName, ...AlgorithmName[]]),
    limit: z.number().int().min(1).max(MAX_LIMIT),
    windowMs: z.number().int().min(1000).max(MAX_WINDOW_MS),
    burst: z.number().int().min(1).max(MAX_LIMIT).optional(),
    shadow: z.boolean(),
    // A time a Date can show: an expiry past MAX_TIME_MS (--expires 99999999d) once stopped every instance at its next poll.
    setAtMs: z.number().int().min(0).max(MAX_TIME_MS),
    expiresAtMs: z.number().int().min(0).max(MAX_TIME_MS).nullable(),
  })
  .strict();

export class CorruptOverrideError extends Error {
  readonly code = 'ERR_FIRELIMIT_CORRUPT_OVERRIDE';
  override readonly name = 'CorruptOverrideError';
}

/** Checks a stored record; throws CorruptOverrideError naming where it came from. */
export function parseOverrideRecord(value: unknown, where: string): LimitOverrideRecord {
  const parsed = recordSchema.safeParse(value);
  if (!parsed.success) throw new CorruptOverrideError(`${where}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`).join('; ')}`);
  const record = parsed.data as LimitOverrideRecord;
  if (record.id !== overrideIdOf(record.target)) throw new CorruptOverrideError(`${where}: id ${record.id} does not match its target`);
  policiesOf(record, where);
  return record;
}

/** The override's one policy, named for the headers: `override` or `override-TOOL`. */
export function policiesOf(record: Omit<LimitOverrideRecord, 'id' | 'setAtMs' | 'expiresAtMs' | 'shadow'>, where = 'override'): readonly [RateLimitPolicy] {
  const policy: RateLimitPolicy = {
    name: record.target.tool === undefined ? 'override' : `override-${record.target.tool.replace(/[^A-Za-z0-9_-]/g, '-')}`.slice(0, 64),
    algorithm: record.algorithm,
    limit: record.limit,
    windowMs: record.windowMs,
    ...(record.burst !== undefined ? { burst: record.burst } : {}),
  };
  try {
    assertValidPolicySet([policy]);
  } catch (error) {
    throw new CorruptOverrideError(`${where}: ${(error as Error).message}`);
  }
  return [policy];
}

export function toLimitOverride(record: LimitOverrideRecord): LimitOverride {
  return { target: record.target, policies: policiesOf(record), shadow: record.shadow, setAtMs: record.setAtMs, expiresAtMs: record.expiresAtMs };
}

/** A stored record the service cannot load: skipped, never applied, never fatal. */
export interface SkippedOverride {
  /** Where it is: the file and its index, or the collection and document. */
  readonly where: string;
  readonly problem: string;
}

/** One read of the store: the records in force, and those it holds but nobody can load. */
export interface OverrideListing {
  readonly records: LimitOverrideRecord[];
  readonly skipped: readonly SkippedOverride[];
}

/** Splits a CorruptOverrideError's text ("where: problem") for a listing. */
export function skippedOf(error: CorruptOverrideError, where: string): SkippedOverride {
  return { where, problem: error.message.startsWith(`${where}: `) ? error.message.slice(where.length + 2) : error.message };
}

/**
 * Where overrides are kept; file and Firestore implement it. Expired records
 * are never returned. A record that cannot be loaded is listed as skipped; a
 * store that cannot be read at all (a file that is not JSON) throws.
 */
export interface LimitOverrideStore {
  list(nowMs: number): Promise<OverrideListing>;
  /** Replaces the record of the same target. */
  put(record: LimitOverrideRecord): Promise<void>;
  /** False when the target had no live override. */
  remove(id: string, nowMs: number): Promise<boolean>;
  close(): Promise<void>;
}
