import type { PolicySet } from '../library';

/**
 * What a runtime override applies to: a token, a tier or every token, and
 * optionally one tool. Without a tool it replaces the tier's limits for the
 * calls it covers; with one, the limits of the rules naming that tool.
 */
export interface OverrideTarget {
  readonly tokenId?: string;
  readonly tier?: string;
  readonly tool?: string;
}

/** A limit set at runtime (`npm run limits -- set ...`), with no redeploy. */
export interface LimitOverride {
  readonly target: OverrideTarget;
  /** Built once when the override is loaded, so the limiter sees the same set call after call. */
  readonly policies: PolicySet;
  readonly shadow: boolean;
  readonly setAtMs: number;
  /** Epoch ms after which the override no longer applies; null: until unset. */
  readonly expiresAtMs: number | null;
}

/**
 * The one id of a target: `token=tok_x`, `tier=pro;tool=search`, `tool=search`.
 * Setting an override for a target replaces the one it had, so two overrides
 * never share a target.
 */
export function overrideIdOf(target: OverrideTarget): string {
  const parts: string[] = [];
  if (target.tokenId !== undefined) parts.push(`token=${target.tokenId}`);
  if (target.tier !== undefined) parts.push(`tier=${target.tier}`);
  if (target.tool !== undefined) parts.push(`tool=${target.tool}`);
  return parts.join(';');
}

export function isLive(override: LimitOverride, nowMs: number): boolean {
  return override.expiresAtMs === null || override.expiresAtMs > nowMs;
}

/** Overrides by id (overrideIdOf); what every instance holds and refreshes from the store. */
export type OverrideIndex = ReadonlyMap<string, LimitOverride>;

export const NO_OVERRIDES: OverrideIndex = new Map();

/**
 * The override that governs a scope, most specific first: the token's own,
 * then its tier's, then (tools only) every token's. Expired ones are skipped
 * even before the store forgets them, so an expiry takes effect on time.
 */
export function overrideFor(index: OverrideIndex, tokenId: string, tier: string, tool: string | undefined, nowMs: number): LimitOverride | undefined {
  const candidates =
    // Stryker disable next-line ConditionalExpression: the tool lists with no tool add the id "", which no stored override has (a target names a token, a tier or a tool: limit-override-record.ts)
    tool === undefined
      ? [{ tokenId }, { tier }]
      : [{ tokenId, tool }, { tier, tool }, { tool }];
  for (const target of candidates) {
    const found = index.get(overrideIdOf(target));
    if (found !== undefined && isLive(found, nowMs)) return found;
  }
  return undefined;
}
