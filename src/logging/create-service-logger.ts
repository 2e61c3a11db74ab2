import type { Writable } from 'node:stream';
import type { Config } from '../config/config';
import { createCloudLogSink } from './cloud-log-sink';
import { createLogger, type Logger } from '../shared/logger';
import { createPrettyLogSink } from './pretty-log-sink';
import { maskKnownSecrets, secretsOfAuthorization } from './known-secrets';

export interface ServiceLoggerOptions {
  /** Default process.stdout. */
  readonly output?: Writable;
  /** JSON lines written once per event-loop turn (../logging/line-writer); default: whether the output is process.stdout. */
  readonly batch?: boolean;
}

/**
 * The service's logger: JSON for Cloud Logging, or one readable line per
 * entry in a terminal (`config.log.format`, from LOG_FORMAT or whether stdout
 * is a TTY). Both sinks redact secrets before writing.
 */
export function createServiceLogger(config: Pick<Config, 'log' | 'firebase'> & Partial<Pick<Config, 'upstream'>>, options: ServiceLoggerOptions = {}): Logger {
  const sink =
    config.log.format === 'pretty'
      ? createPrettyLogSink({ output: options.output })
      : createCloudLogSink({ projectId: config.firebase.projectId, output: options.output, batch: options.batch });
  // The upstream credential has no shape a pattern knows; it is masked by value.
  return createLogger(maskKnownSecrets(sink, secretsOfAuthorization(config.upstream?.authorization)));
}
