/**
 * Shared helpers for benchmark sections: a plain-text table printer and small
 * statistics helpers. Every bench section returns a `BenchTable` and
 * `bench/run.ts` prints it.
 */

export interface BenchTable {
  title: string;
  columns: string[];
  rows: (string | number)[][];
  notes?: string[];
}

function formatCell(value: string | number): string {
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/** Renders the table as aligned plain text (numbers right-aligned). */
export function formatTable(t: BenchTable): string {
  const cells = t.rows.map((row) => t.columns.map((_, i) => formatCell(row[i] ?? '')));
  const widths = t.columns.map((col, i) =>
    Math.max(col.length, ...cells.map((row) => row[i]?.length ?? 0)),
  );
  const numeric = t.columns.map(
    (_, i) => t.rows.length > 0 && t.rows.every((row) => typeof row[i] === 'number'),
  );
  const line = (row: string[]): string =>
    row
      .map((cell, i) => (numeric[i] ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const out: string[] = [];
  out.push(t.title);
  out.push('='.repeat(t.title.length));
  out.push(line(t.columns));
  out.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells) out.push(line(row));
  for (const note of t.notes ?? []) out.push(`note: ${note}`);
  return out.join('\n');
}

/** Prints the table (followed by a blank line) to stdout. */
export function printTable(t: BenchTable): void {
  process.stdout.write(`${formatTable(t)}\n\n`);
}

/**
 * Nearest-rank percentile, p in [0, 100]. Accepts sorted or unsorted input
 * (a sorted copy is made; the argument is not mutated). NaN for empty input.
 */
export function percentile(sortedOrUnsorted: number[], p: number): number {
  if (sortedOrUnsorted.length === 0) return Number.NaN;
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile p must be in [0, 100], got ${p}`);
  const sorted = isSorted(sortedOrUnsorted)
    ? sortedOrUnsorted
    : [...sortedOrUnsorted].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

/** Median (average of the two middle values for even lengths). NaN for empty input. */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = isSorted(values) ? values : [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function isSorted(values: number[]): boolean {
  for (let i = 1; i < values.length; i++) {
    if ((values[i - 1] as number) > (values[i] as number)) return false;
  }
  return true;
}

/**
 * Times `calls` sequential calls, cycling through `keys` from `offset`, and
 * pushes each call's wall time in ns to `out` (null: warm-up, nothing kept).
 * `sync` calls are not awaited, so a synchronous API pays no microtask.
 */
export async function timeCalls(
  call: (key: string) => unknown,
  keys: readonly string[],
  offset: number,
  calls: number,
  out: number[] | null,
  sync = false,
): Promise<void> {
  for (let i = 0; i < calls; i++) {
    const key = keys[(offset + i) % keys.length] as string;
    const t0 = process.hrtime.bigint();
    if (sync) call(key);
    else await call(key);
    const t1 = process.hrtime.bigint();
    if (out !== null) out.push(Number(t1 - t0));
  }
}

export function microseconds(ns: number): number {
  return ns / 1000;
}
