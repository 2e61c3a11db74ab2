/** What the test sends an app worker over IPC. */
export type AppWorkerRequest =
  | {
      readonly type: 'init';
      /** RTDB databaseURL (with ?ns=); FIREBASE_DATABASE_EMULATOR_HOST is set in the worker's env. */
      readonly databaseUrl: string;
      /** The file token store every worker shares (TOKENS_FILE). */
      readonly tokensFile: string;
      /** Environment knobs for loadConfig, e.g. RATE_LIMIT_PER_MINUTE. */
      readonly env: Readonly<Record<string, string>>;
      /** The service's one clock (limiters, token cache, headers, tools) is fixed here, so every process decides in the same window. */
      readonly nowMs: number;
    }
  | { readonly type: 'close' };

export type AppWorkerReply =
  | { readonly type: 'ready'; readonly port: number }
  | { readonly type: 'closed' }
  | { readonly type: 'error'; readonly message: string };
