import type { LogFields, LogSink } from '../shared/logger';
import { REDACTED } from './redact';

/** Shorter than this, a "secret" would mask ordinary words in the log; such a credential is refused nowhere, only not masked by value. */
const MIN_SECRET_CHARS = 8;

/**
 * The configured secrets a pattern cannot recognise (an upstream API key has
 * no prefix of ours): the whole Authorization value and its credential after
 * the scheme, masked wherever they occur in a message or a field, before the
 * sink's own redaction runs. Defence in depth: nothing logs them on purpose.
 */
export function secretsOfAuthorization(authorization: string | undefined): string[] {
  if (authorization === undefined) return [];
  const credential = /^\S+\s+(\S.*)$/.exec(authorization)?.[1];
  return [authorization, credential].filter((s): s is string => s !== undefined && s.length >= MIN_SECRET_CHARS);
}

export function maskKnownSecrets(sink: LogSink, secrets: readonly string[]): LogSink {
  const known = [...new Set(secrets)].filter((s) => s.length >= MIN_SECRET_CHARS).sort((a, b) => b.length - a.length);
  if (known.length === 0) return sink;
  const mask = (text: string): string => known.reduce((out, secret) => out.split(secret).join(REDACTED), text);
  const maskValue = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return mask(value);
    if (value === null || typeof value !== 'object' || depth > 8) return value;
    if (Array.isArray(value)) return value.map((item) => maskValue(item, depth + 1));
    if (value instanceof Error) return maskValue({ name: value.name, message: value.message, stack: value.stack }, depth);
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, maskValue(item, depth + 1)]));
  };
  return (severity, message, fields) => sink(severity, mask(message), maskValue(fields, 0) as LogFields);
}
