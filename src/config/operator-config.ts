import { loadConfig, type Config, type LoadConfigOptions } from './config';

/**
 * The knobs the operator commands (`npm run token`, `npm run limits`) read:
 * the tiers (to check `--tier`), the token store and its overrides, the
 * trusted issuers (to name a signed-in caller by `--issuer`/`--subject`). Nothing
 * of the backend or the gateway: a laptop that creates tokens has no Redis
 * password or upstream credential, and must not need one.
 */
export const OPERATOR_KNOBS = [
  'RATE_LIMIT_PER_MINUTE',
  'RATE_LIMIT_ALGORITHM',
  'RATE_LIMIT_BURST',
  'RATE_LIMIT_TIERS',
  'LIMITS_FILE',
  'TOKEN_STORE',
  'TOKENS_FILE',
  'TOKEN_CACHE_TTL_MS',
  'LIMIT_OVERRIDES_POLL_MS',
  'FIREBASE_DATABASE_URL',
  'FIREBASE_DATABASE_EMULATOR_HOST',
  'FIRESTORE_EMULATOR_HOST',
  'GOOGLE_CLOUD_PROJECT',
  'AUTH_ISSUERS_FILE',
  'FIREBASE_AUTH_PROJECT_ID',
] as const;

export interface OperatorConfig {
  /** The configuration with every other knob at its default: read only `rateLimit.tiers`, `tokens` and `firebase` from it. */
  readonly config: Config;
  /**
   * UPSTREAM_MCP_URL is set: the service fronts an upstream whose tool names
   * only the upstream knows, so `limits set --tool` takes any well-formed
   * name (docs/adr/0048).
   */
  readonly gateway: boolean;
}

/** The operator commands' configuration; throws ConfigError for a bad value of a knob they read, and only then. */
export function loadOperatorConfig(env: NodeJS.ProcessEnv, options: LoadConfigOptions = {}): OperatorConfig {
  const read: NodeJS.ProcessEnv = {};
  for (const name of OPERATOR_KNOBS) if (env[name] !== undefined) read[name] = env[name];
  const config = loadConfig(read, { ...options, upstreamSection: 'schema-only' });
  return { config, gateway: (env.UPSTREAM_MCP_URL ?? '').trim() !== '' };
}
