import type { Writable } from 'node:stream';
import { Entry } from '@google-cloud/logging';
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

// Top-level keys the structured-logging agent interprets; a payload field by these names would be misread.
const RESERVED = new Set(['severity', 'message', 'timestamp', 'time', 'logName', 'resource', 'insertId', 'labels']);

/**
 * Fields with a meaning to Cloud Logging, lifted out of the payload into the
 * entry's metadata: `httpRequest` (LogEntry HttpRequest shape, latency as
 * "0.012s"), `trace`, `spanId`, `traceSampled`. The request-log middleware
 * sets them; any other caller may too.
 */
interface EntryMetadata {
  severity: string;
  httpRequest?: Record<string, unknown>;
  trace?: string;
  spanId?: string;
  traceSampled?: boolean;
}

/**
 * One JSON line per entry on stdout, in the shape @google-cloud/logging's
 * `Entry.toStructuredJSON` gives it, so Cloud Run turns each into a
 * structured entry with its severity, request and trace. No network and no
 * credentials: writing to stdout needs neither (on Cloud Run the agent adds
 * the resource and log name itself).
 *
 * `logName` is written only when the project is known. The library's
 * `LogSync` always writes one, with the literal `{{projectId}}` when it has
 * no project, and a placeholder in every line misleads whoever reads or
 * filters them; it also adds a diagnostic entry of its own per process.
 */
export function createCloudLogSink(options: CloudLogSinkOptions = {}): LogSink {
  const projectId = options.projectId === '' ? undefined : options.projectId;
  const output = options.output ?? process.stdout;
  const logName = projectId === undefined ? undefined : `projects/${projectId}/logs/${encodeURIComponent(options.logName ?? 'firelimit')}`;

  return (severity, message, fields) => {
    const { metadata, payload } = split(redactFields(fields), projectId);
    metadata.severity = severity;
    const text = redactText(message);
    // useMessageField false: fields sit at the top of jsonPayload, where filters such as jsonPayload.tokenId find them.
    const entry: Record<string, unknown> = new Entry(metadata, { ...payload, message: text }).toStructuredJSON(projectId, false);
    if (logName !== undefined) entry.logName = logName;
    let line: string;
    try {
      line = JSON.stringify(entry);
    } catch {
      // A field JSON cannot hold (a BigInt): the line still goes out, without its fields, rather than throw into a request.
      line = JSON.stringify({ severity, message: text, logName, loggingError: 'fields could not be serialized' });
    }
    output.write(`${line}\n`);
  };
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
