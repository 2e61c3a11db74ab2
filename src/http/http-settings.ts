import type { Config } from '../config/config';

/**
 * The HTTP hardening figures, with their defaults. `config.http` gains these
 * fields on another branch; until both meet, they are read here as optional
 * so this compiles with and without them. One accessor, so the clean-up at
 * merge is one file.
 */
export interface HttpSettings {
  /** Most time to receive a request's headers (Node's `server.headersTimeout`). Default 10 000. */
  readonly headersTimeoutMs: number;
  /** Most time to receive a whole request (Node's `server.requestTimeout`). Default 30 000. */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept. Default 5 000. */
  readonly keepAliveTimeoutMs: number;
  /** Most open connections; 0 = no cap. Default 0. */
  readonly maxConnections: number;
  /** Most messages in one JSON-RPC batch; the MCP SDK's own bound (`MAX_BATCH_SIZE`). Default 100. */
  readonly maxBatchMessages: number;
}

export const HTTP_SETTING_DEFAULTS: HttpSettings = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 0,
  maxBatchMessages: 100,
};

type MaybeHttpSettings = Config['http'] & Partial<HttpSettings>;

export function httpSettingsOf(config: Config): HttpSettings {
  const http: MaybeHttpSettings = config.http;
  return {
    headersTimeoutMs: http.headersTimeoutMs ?? HTTP_SETTING_DEFAULTS.headersTimeoutMs,
    requestTimeoutMs: http.requestTimeoutMs ?? HTTP_SETTING_DEFAULTS.requestTimeoutMs,
    keepAliveTimeoutMs: http.keepAliveTimeoutMs ?? HTTP_SETTING_DEFAULTS.keepAliveTimeoutMs,
    maxConnections: http.maxConnections ?? HTTP_SETTING_DEFAULTS.maxConnections,
    maxBatchMessages: http.maxBatchMessages ?? HTTP_SETTING_DEFAULTS.maxBatchMessages,
  };
}
