import type { Writable } from 'node:stream';
import type { LogFields, LogSink, Severity } from '../shared/logger';
import { redactFields, redactText } from './redact';

export interface PrettyLogSinkOptions {
  /** Default process.stdout. */
  readonly output?: Writable & { isTTY?: boolean };
  /** ANSI colours; default: whether the output is a terminal. */
  readonly color?: boolean;
  /** Default Date.now; injected so tests get stable timestamps. */
  readonly clock?: () => number;
}

const COLORS: Record<Severity, string> = { DEBUG: '\x1b[90m', INFO: '\x1b[36m', WARNING: '\x1b[33m', ERROR: '\x1b[31m' };
const RESET = '\x1b[0m';
const DIM = '\x1b[2m';

/**
 * One line per entry for a person at a terminal:
 * `12:34:56.789 INFO  POST /mcp 200 3ms  tokenId=tok_… shared=false`.
 * Same redaction as the JSON sink: a developer's terminal is copied into
 * bug reports too.
 */
export function createPrettyLogSink(options: PrettyLogSinkOptions = {}): LogSink {
  const output = options.output ?? process.stdout;
  const color = options.color ?? output.isTTY === true;
  const clock = options.clock ?? Date.now;
  return (severity, message, fields) => {
    const safe = redactFields(fields);
    const time = new Date(clock()).toISOString().slice(11, 23);
    const level = severity.padEnd(7);
    const rest = formatFields(safe);
    const line = color
      ? `${DIM}${time}${RESET} ${COLORS[severity]}${level}${RESET} ${redactText(message)}${rest ? `  ${DIM}${rest}${RESET}` : ''}`
      : `${time} ${level} ${redactText(message)}${rest ? `  ${rest}` : ''}`;
    output.write(`${line}\n`);
  };
}

function formatFields(fields: LogFields): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    // The request line already says method, path and status; keep what it does not.
    if (key === 'httpRequest' && value !== null && typeof value === 'object') {
      const r = value as Record<string, unknown>;
      const seconds = typeof r.latency === 'string' ? Number.parseFloat(r.latency) : Number.NaN;
      if (Number.isFinite(seconds)) parts.push(`${(seconds * 1000).toFixed(1)}ms`);
      if (r.remoteIp !== undefined) parts.push(`ip=${String(r.remoteIp)}`);
      continue;
    }
    // Trace ids are for Cloud Logging's correlation; in a terminal they are noise.
    if (key === 'event' || key === 'trace' || key === 'spanId' || key === 'traceSampled') continue;
    parts.push(...flatten(key, value));
  }
  return parts.join(' ');
}

function flatten(key: string, value: unknown): string[] {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([k, v]) => (v === undefined ? [] : flatten(`${key}.${k}`, v)));
  }
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return [`${key}=${/[\s"=]/.test(text) ? JSON.stringify(text) : text}`];
}
