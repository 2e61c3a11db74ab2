import type { Captured } from './node-22';

/** One Inspector run of `npm run inspector-check` and what it failed to show. */
export interface Check {
  readonly run: string;
  readonly got: Captured;
  readonly failures: readonly string[];
}

export interface ErrorEnvelope {
  readonly error?: { code?: string; message?: string; cause?: string; status?: number };
}

/** The Inspector's error envelope: the one stderr line that is a JSON object with `error`. */
export function envelope(text: string): ErrorEnvelope['error'] {
  for (const line of text.split(/\r?\n/)) {
    if (!line.startsWith('{"error"')) continue;
    try {
      return (JSON.parse(line) as ErrorEnvelope).error;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export function expectThat(failures: string[], ok: boolean, what: string): void {
  if (!ok) failures.push(what);
}

/** The result the Inspector printed on stdout (one JSON document), or undefined. */
export function printedResult(got: Captured): Record<string, unknown> | undefined {
  try {
    return JSON.parse(got.stdout) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
