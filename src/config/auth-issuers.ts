import { z } from 'zod';
import type { ConfigProblem } from './config-error';

/**
 * Issuers whose tokens firelimit accepts beside its own `flk_` tokens
 * (docs/adr/0054-oauth-resource-server.md): firelimit is a resource server
 * in front of the operator's authorization server, never one itself.
 *
 * AUTH_ISSUERS_FILE is JSON:
 *
 *   { "resource": "https://mcp.example.com/mcp",
 *     "issuers": [
 *       { "issuer": "https://idp.example.com", "tierClaim": "plan" },
 *       { "preset": "firebase", "projectId": "my-project" } ] }
 *
 * FIREBASE_AUTH_PROJECT_ID=my-project adds the Firebase preset alone.
 */

/** Only asymmetric algorithms: an HMAC "signature" made with a public key must never verify. */
export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
export type AsymmetricAlgorithm = (typeof ASYMMETRIC_ALGORITHMS)[number];

/** Where Firebase Authentication (and Identity Platform) publishes its ID token keys, as a JWK set. */
export const FIREBASE_JWKS_URL = 'https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com';
export const FIREBASE_ISSUER_PREFIX = 'https://securetoken.google.com/';

export const ISSUER_DEFAULTS = {
  /** Seconds of skew allowed on exp/nbf/iat. */
  clockToleranceMs: 30_000,
  /** A key set is used this long before it is fetched again (jose's own default too). */
  jwksMaxAgeMs: 600_000,
  /** At most one fetch per this interval, whatever asks (an unknown kid, a failed fetch). */
  jwksCooldownMs: 30_000,
  tierClaim: 'tier',
  scope: 'mcp',
} as const;

/** One trusted issuer, fully resolved. */
export interface TrustedIssuer {
  /** `iss` exactly as the tokens carry it. */
  readonly issuer: string;
  /** The expected `aud` (RFC 8707 resource for access tokens; the project id for Firebase ID tokens). */
  readonly audience: string;
  /** Undefined: `jwks_uri` from the issuer's discovery document. */
  readonly jwksUrl: string | undefined;
  readonly algorithms: readonly AsymmetricAlgorithm[];
  /** The claim naming the caller's tier. Default "tier". */
  readonly tierClaim: string;
  /** The tier when the claim is absent or names no tier. Default "default". */
  readonly defaultTier: string;
  /**
   * The scope (in `scope`/`scp`) that grants /mcp. Null: every verified token
   * may call /mcp (Firebase ID tokens carry no scopes). Default "mcp".
   */
  readonly scope: string | null;
  readonly clockToleranceMs: number;
  readonly jwksMaxAgeMs: number;
  readonly jwksCooldownMs: number;
  /** Named in the protected resource metadata as an authorization server (false for Firebase, which runs none). */
  readonly oauth: boolean;
  /** 'firebase' for the preset: `sub` is the Firebase uid. */
  readonly preset: 'firebase' | undefined;
}

export interface AuthConfig {
  /** Empty: only `flk_` tokens, and the OAuth paths answer as ADR 0025 says. */
  readonly issuers: readonly TrustedIssuer[];
  /** The resource identifier served in RFC 9728 metadata; undefined: `<origin>/mcp` of the request. */
  readonly resource: string | undefined;
}

const httpsUrl = (what: string) =>
  z.string({ error: `expected ${what}` }).refine(isUsableUrl, { error: `expected ${what}: an https:// URL (http:// only on a loopback host), without credentials or fragment` });

const commonFields = {
  algorithms: z.array(z.enum(ASYMMETRIC_ALGORITHMS, { error: `expected asymmetric algorithms only: ${ASYMMETRIC_ALGORITHMS.join(', ')}` })).min(1).max(ASYMMETRIC_ALGORITHMS.length).optional(),
  tierClaim: z.string().regex(/^[A-Za-z0-9_.:/-]{1,64}$/, { error: 'expected a claim name' }).optional(),
  defaultTier: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, { error: 'expected a tier name' }).optional(),
  jwksUrl: httpsUrl('a JWKS URL').optional(),
  clockToleranceMs: z.number().int().min(0).max(300_000, { error: 'expected at most 300000 ms (5 minutes)' }).optional(),
  jwksMaxAgeMs: z.number().int().min(60_000).max(86_400_000, { error: 'expected from 60000 ms to a day' }).optional(),
  jwksCooldownMs: z.number().int().min(1_000).max(3_600_000, { error: 'expected from 1000 ms to an hour' }).optional(),
};

const oauthIssuerSchema = z
  .object({
    issuer: httpsUrl('an issuer URL'),
    audience: z.string().min(1).max(2048).optional(),
    scope: z.union([z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/, { error: 'expected one scope token' }), z.null()]).optional(),
    ...commonFields,
  })
  .strict();

const firebaseIssuerSchema = z
  .object({
    preset: z.literal('firebase'),
    projectId: z.string().regex(/^[a-z][a-z0-9-]{4,61}[a-z0-9]$/, { error: 'expected a Firebase project id such as "my-project"' }),
    ...commonFields,
  })
  .strict();

const issuersFileSchema = z
  .object({
    resource: httpsUrl('the resource URL of /mcp').optional(),
    // Each entry is checked by its own schema below, so a problem names the entry's own field (a union would say only "Invalid input").
    issuers: z.array(z.unknown(), { error: 'expected a list of issuers' }).min(1, { error: 'expected at least one issuer' }).max(16, { error: 'expected at most 16 issuers' }),
  })
  .strict();

const FILE_FIX = 'correct that field in AUTH_ISSUERS_FILE (README, "Signing in with your identity provider"), or unset AUTH_ISSUERS_FILE';

/** The Firebase preset for a project: its issuer, the project id as audience, Google's keys, RS256. */
export function firebaseIssuer(projectId: string, overrides: Partial<Pick<TrustedIssuer, 'jwksUrl' | 'tierClaim' | 'defaultTier' | 'clockToleranceMs' | 'jwksMaxAgeMs' | 'jwksCooldownMs' | 'algorithms'>> = {}): TrustedIssuer {
  return {
    issuer: `${FIREBASE_ISSUER_PREFIX}${projectId}`,
    audience: projectId,
    jwksUrl: overrides.jwksUrl ?? FIREBASE_JWKS_URL,
    algorithms: overrides.algorithms ?? ['RS256'],
    tierClaim: overrides.tierClaim ?? ISSUER_DEFAULTS.tierClaim,
    defaultTier: overrides.defaultTier ?? 'default',
    scope: null,
    clockToleranceMs: overrides.clockToleranceMs ?? ISSUER_DEFAULTS.clockToleranceMs,
    jwksMaxAgeMs: overrides.jwksMaxAgeMs ?? ISSUER_DEFAULTS.jwksMaxAgeMs,
    jwksCooldownMs: overrides.jwksCooldownMs ?? ISSUER_DEFAULTS.jwksCooldownMs,
    oauth: false,
    preset: 'firebase',
  };
}

export interface AuthSources {
  /** AUTH_ISSUERS_FILE's text, already read; undefined when the knob is unset. */
  readonly issuersFileText: string | undefined;
  readonly firebaseProjectId: string | undefined;
  /** The configured tier names, to check defaultTier against. */
  readonly tierNames: readonly string[];
}

/** The trusted issuers from both knobs; problems are pushed, naming the knob and the path in the file. */
export function authConfigOf(sources: AuthSources, problems: ConfigProblem[]): AuthConfig {
  const issuers: TrustedIssuer[] = [];
  let resource: string | undefined;
  if (sources.issuersFileText !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(sources.issuersFileText);
    } catch {
      problems.push({ knob: 'AUTH_ISSUERS_FILE', problem: 'the file is not JSON', fix: FILE_FIX });
      return { issuers: [], resource: undefined };
    }
    const parsed = issuersFileSchema.safeParse(json);
    if (!parsed.success) {
      for (const issue of parsed.error.issues.slice(0, 5)) {
        problems.push({ knob: 'AUTH_ISSUERS_FILE', problem: `${issue.path.join('.') || '(top level)'}: ${issue.message}`, fix: FILE_FIX });
      }
      return { issuers: [], resource: undefined };
    }
    resource = parsed.data.resource;
    parsed.data.issuers.forEach((raw, i) => {
      const isPreset = raw !== null && typeof raw === 'object' && 'preset' in raw;
      const checked = (isPreset ? firebaseIssuerSchema : oauthIssuerSchema).safeParse(raw);
      if (!checked.success) {
        for (const issue of checked.error.issues.slice(0, 5)) {
          problems.push({ knob: 'AUTH_ISSUERS_FILE', problem: `${['issuers', i, ...issue.path].join('.')}: ${issue.message}`, fix: FILE_FIX });
        }
        return;
      }
      const entry = checked.data;
      if ('preset' in entry) {
        issuers.push(firebaseIssuer(entry.projectId, entry));
        return;
      }
      const audience = entry.audience ?? resource;
      if (audience === undefined) {
        problems.push({ knob: 'AUTH_ISSUERS_FILE', problem: `issuers.${i}.audience: no audience, and no top-level "resource" to default it to`, fix: 'set "resource" to the URL of /mcp (e.g. "https://mcp.example.com/mcp"), or the issuer\'s "audience"' });
        return;
      }
      issuers.push({
        issuer: entry.issuer,
        audience,
        jwksUrl: entry.jwksUrl,
        algorithms: entry.algorithms ?? ['RS256', 'PS256', 'ES256', 'EdDSA'],
        tierClaim: entry.tierClaim ?? ISSUER_DEFAULTS.tierClaim,
        defaultTier: entry.defaultTier ?? 'default',
        scope: entry.scope === undefined ? ISSUER_DEFAULTS.scope : entry.scope,
        clockToleranceMs: entry.clockToleranceMs ?? ISSUER_DEFAULTS.clockToleranceMs,
        jwksMaxAgeMs: entry.jwksMaxAgeMs ?? ISSUER_DEFAULTS.jwksMaxAgeMs,
        jwksCooldownMs: entry.jwksCooldownMs ?? ISSUER_DEFAULTS.jwksCooldownMs,
        oauth: true,
        preset: undefined,
      });
    });
  }
  if (sources.firebaseProjectId !== undefined) issuers.push(firebaseIssuer(sources.firebaseProjectId));

  const seen = new Set<string>();
  for (const issuer of issuers) {
    if (seen.has(issuer.issuer)) {
      problems.push({ knob: sources.firebaseProjectId !== undefined ? 'FIREBASE_AUTH_PROJECT_ID' : 'AUTH_ISSUERS_FILE', problem: `the issuer ${issuer.issuer} is configured twice`, fix: 'keep one entry per issuer' });
    }
    seen.add(issuer.issuer);
    if (!sources.tierNames.includes(issuer.defaultTier)) {
      problems.push({ knob: 'AUTH_ISSUERS_FILE', problem: `the issuer ${issuer.issuer} has defaultTier "${issuer.defaultTier}", which is not a tier (tiers: ${sources.tierNames.join(', ')})`, fix: 'name a configured tier, or add that tier' });
    }
  }
  return { issuers, resource };
}

function isUsableUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  if (url.username !== '' || url.password !== '' || url.hash !== '') return false;
  if (url.protocol === 'https:') return true;
  // Plain http only where nothing on a network can change the answer: the tests' provider on loopback.
  return url.protocol === 'http:' && (url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname === 'localhost');
}
