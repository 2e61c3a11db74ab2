import type { Writable } from 'node:stream';
import { Entry, LogSync, type Logging } from '@google-cloud/logging';
import type { LogFields, LogSink } from '../shared/logger';
import { redactFields, redactText } from './redact';
import { qualifyTrace } from './trace-context';

export interface CloudLogSinkOptions {
  /** Qualifies trace ids as `projects/P/traces/T` so Cloud Logging links them to Cloud Trace. */
  readonly projectId?: string;
  /** Default process.stdout, which Cloud Run's agent reads; tests pass a stream to capture. */
  readonly output?: Writable;
  /** Default "firelimit". */
  readonly logName?: string;
}

/**
 * Fields with a meaning to Cloud Logging, lifted out of the payload into the
 * entry's metadata: `httpRequest` (LogEntry HttpRequest shape, latency as
 * "0.012s"), `trace`, `spanId`, `traceSampled`. The request-log middleware
 * sets them; any other caller may too.
 */
export const METADATA_FIELDS = ['httpRequest', 'trace', 'spanId', 'traceSampled'] as const;

// Top-level keys the structured-logging agent interprets; a payload field by these names would be misread.
const RESERVED = new Set(['severity', 'message', 'timestamp', 'time', 'logName', 'resource', 'insertId', 'labels']);

interface EntryMetadata {
  severity: string;
  httpRequest?: Record<string, unknown>;
  trace?: string;
  spanId?: string;
  traceSampled?: boolean;
}

/**
 * One JSON line per entry on stdout, through @google-cloud/logging's LogSync,
 * so Cloud Run turns each into a structured entry with its severity, request
 * and trace. No network and no credentials: writing to stdout needs neither
 * (on Cloud Run the agent adds the resource and log name itself).
 */
export function createCloudLogSink(options: CloudLogSinkOptions = {}): LogSink {
  const projectId = options.projectId === '' ? undefined : options.projectId;
  // useMessageField false: fields sit at the top of jsonPayload, where filters such as jsonPayload.tokenId find them.
  const log = new LogSync(stdoutOnlyLogging(projectId), options.logName ?? 'firelimit', options.output ?? process.stdout, {
    useMessageField: false,
  });

  return (severity, message, fields) => {
    const { metadata, payload } = split(redactFields(fields), projectId);
    metadata.severity = severity;
    log.write(log.entry(metadata, { ...payload, message: redactText(message) }));
  };
}

/**
 * What LogSync uses of a Logging instance: the project id, the resource and
 * entry(). A real `new Logging()` also builds gRPC clients that probe the GCE
 * metadata server and look for credentials at start-up (a warning and a
 * network round trip on every laptop), none of which writing to stdout needs.
 */
function stdoutOnlyLogging(projectId: string | undefined): Logging {
  const logging = {
    // The library's own placeholder when it does not know the project; the logName is informational on stdout.
    projectId: projectId ?? '{{projectId}}',
    detectedResource: undefined,
    entry: (metadata?: object, data?: unknown) => new Entry(metadata, data as object | string | undefined),
  };
  return logging as unknown as Logging;
}

function split(fields: LogFields, projectId: string | undefined): { metadata: EntryMetadata; payload: Record<string, unknown> } {
  const metadata: EntryMetadata = { severity: 'DEFAULT' };
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'httpRequest' && value !== null && typeof value === 'object') metadata.httpRequest = value as Record<string, unknown>;
    else if (key === 'trace' && typeof value === 'string') metadata.trace = qualifyTrace(value, projectId);
    else if (key === 'spanId' && typeof value === 'string') metadata.spanId = value;
    else if (key === 'traceSampled' && typeof value === 'boolean') metadata.traceSampled = value;
    else payload[RESERVED.has(key) || key.startsWith('logging.googleapis.com/') ? `field_${key}` : key] = value;
  }
  return { metadata, payload };
}
