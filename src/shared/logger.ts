/**
 * The logging port: what every layer logs through. The sinks that format for
 * Cloud Logging or a terminal live in src/logging/; tests capture.
 */
export type Severity = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';

/** Structured fields travel beside the message; never put a secret in either. */
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** One write per entry; the production logger formats for Cloud Logging, tests capture. */
export type LogSink = (severity: Severity, message: string, fields: LogFields) => void;

export function createLogger(sink: LogSink): Logger {
  return {
    debug: (message, fields = {}) => sink('DEBUG', message, fields),
    info: (message, fields = {}) => sink('INFO', message, fields),
    warn: (message, fields = {}) => sink('WARNING', message, fields),
    error: (message, fields = {}) => sink('ERROR', message, fields),
  };
}

export const silentLogger: Logger = createLogger(() => undefined);
