import { createLogger, type LogFields, type Logger, type Severity } from '../../src/shared/logger';

export interface CapturedEntry {
  readonly severity: Severity;
  readonly message: string;
  readonly fields: LogFields;
}

/** A logger that keeps what it is told, for tests that assert on log output. */
export function createCapturingLogger(): Logger & { readonly entries: CapturedEntry[] } {
  const entries: CapturedEntry[] = [];
  return Object.assign(createLogger((severity, message, fields) => entries.push({ severity, message, fields })), { entries });
}
