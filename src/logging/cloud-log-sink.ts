import type { Writable } from 'node:stream';
import type { LogFields, LogSink } from '../shared/logger';
import { createLineWriter } from './line-writer';
import { insertIdSource } from './insert-id';
import { redactFields, redactText } from './redact';
import { qualifyTrace } from './trace-context';

export interface CloudLogSinkOptions {
  /** Qualifies trace ids as `projects/P/traces/T` so Cloud Logging links them to Cloud Trace. */
  readonly projectId?: string;
  /** Default process.stdout, which Cloud Run's agent reads; tests pass a stream to capture. */
  readonly output?: Writable;
  /** Default "firelimit". */
  readonly logName?: string;
  /** One write per event-loop turn instead of per line (./line-writer); default: whether the output is process.stdout. */
  readonly batch?: boolean;
  /** The entry's timestamp; default Date.now. */
  readonly clock?: () => number;
}

// Top-level keys the structured-logging agent interprets; a payload field by these names would be misread.
const RESERVED = new Set(['severity', 'message', 'timestamp', 'time', 'logName', 'resource', 'insertId', 'labels']);
const INSERT_ID_KEY = 'logging.googleapis.com/insertId';
const TRACE_KEY = 'logging.googleapis.com/trace';
const SPAN_ID_KEY = 'logging.googleapis.com/spanId';
const TRACE_SAMPLED_KEY = 'logging.googleapis.com/trace_sampled';

/**
 * One JSON line per entry on stdout, in the shape @google-cloud/logging's
 * `Entry.toStructuredJSON(projectId, false)` gives it (the same keys in the
 * same order: timestamp as seconds and nanos, severity, httpRequest, insertId,
 * trace, spanId, trace_sampled, the payload fields, message, logName), so
 * Cloud Run turns each into a structured entry with its severity, request and
 * trace. Built here in one pass over the redacted fields: the library's Entry
 * deep-copies them three times a line, which on the request path cost more
 * than the answer. No network and no credentials: writing to stdout needs
 * neither (on Cloud Run the agent adds the resource and log name itself).
 *
 * Fields with a meaning to Cloud Logging are lifted out of the payload:
 * `httpRequest` (LogEntry HttpRequest shape, latency as "0.012s"), `trace`,
 * `spanId`, `traceSampled`. The request-log middleware sets them; any other
 * caller may too.
 *
 * `logName` is written only when the project is known. The library's
 * `LogSync` always writes one, with the literal `{{projectId}}` when it has
 * no project, and a placeholder in every line misleads whoever reads or
 * filters them.
 */
export function createCloudLogSink(options: CloudLogSinkOptions = {}): LogSink {
  const projectId = options.projectId === '' ? undefined : options.projectId;
  const output = options.output ?? process.stdout;
  const write = createLineWriter(output, { batch: options.batch ?? output === process.stdout });
  const clock = options.clock ?? Date.now;
  const nextInsertId = insertIdSource();
  const logName = projectId === undefined ? undefined : `projects/${projectId}/logs/${encodeURIComponent(options.logName ?? 'firelimit')}`;

  return (severity, message, fields) => {
    const text = redactText(message);
    const safe = redactFields(fields);
    let line: string;
    try {
      line = JSON.stringify(entryOf(safe, severity, text, timestampOf(clock()), nextInsertId(), projectId, logName));
    } catch {
      // A field JSON cannot hold (a BigInt): the line still goes out, without its fields, rather than throw into a request.
      line = JSON.stringify({ severity, message: text, logName, loggingError: 'fields could not be serialized' });
    }
    write(`${line}\n`);
  };
}

/** Cloud Logging's LogEntry timestamp as the library writes it from a Date. */
function timestampOf(nowMs: number): { seconds: number; nanos: number } {
  const seconds = nowMs / 1000;
  const secondsRounded = Math.floor(seconds);
  return { seconds: secondsRounded, nanos: Math.floor((seconds - secondsRounded) * 1e9) };
}

/**
 * The entry, its keys in the library's order. Values JSON leaves out
 * (undefined) are left out here too, so the line is the library's byte for byte.
 */
function entryOf(
  fields: LogFields,
  severity: string,
  message: string,
  timestamp: { seconds: number; nanos: number },
  insertId: string,
  projectId: string | undefined,
  logName: string | undefined,
): Record<string, unknown> {
  let httpRequest: unknown;
  let trace: string | undefined;
  let spanId: string | undefined;
  let traceSampled: boolean | undefined;
  let payload: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    if (key === 'httpRequest' && value !== null && typeof value === 'object') httpRequest = value;
    else if (key === 'trace' && typeof value === 'string') trace = qualifyTrace(value, projectId) || undefined;
    else if (key === 'spanId' && typeof value === 'string') spanId = value || undefined;
    else if (key === 'traceSampled' && typeof value === 'boolean') traceSampled = value;
    else (payload ??= {})[RESERVED.has(key) || key.startsWith('logging.googleapis.com/') ? `field_${key}` : key] = value;
  }
  const entry: Record<string, unknown> = { timestamp, severity };
  if (httpRequest !== undefined) entry.httpRequest = httpRequest;
  entry[INSERT_ID_KEY] = insertId;
  if (trace !== undefined) entry[TRACE_KEY] = trace;
  if (spanId !== undefined) entry[SPAN_ID_KEY] = spanId;
  if (traceSampled !== undefined) entry[TRACE_SAMPLED_KEY] = traceSampled;
  if (payload !== undefined) for (const key in payload) entry[key] = payload[key];
  entry.message = message;
  if (logName !== undefined) entry.logName = logName;
  return entry;
}
