import type { BenchTable } from './bench-table';

/**
 * The pure half of `npm run bench -- --runtimes=20,24`: which runtimes were
 * asked for, the line a child run prints its tables on, and the merge of each
 * runtime's tables into one table per measurement, so Node 24's rows sit
 * beside Node 20's instead of in a separate run pasted in by hand.
 */

/** Node majors the bench knows where to find: 20 is the node the bench runs on, 24 the one scripts/install-node-24.sh installs. */
export const KNOWN_RUNTIMES: readonly number[] = [20, 24];

/** `"20,24"` as majors, in the order given (the order rows appear in), or why the value is not usable. */
export function parseRuntimes(value: string): readonly number[] | { readonly error: string } {
  const parts = value.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p === '')) {
    return { error: `--runtimes needs a comma-separated list of node majors, e.g. --runtimes=20,24; got "${value}"` };
  }
  const unknown = parts.filter((p) => !KNOWN_RUNTIMES.some((k) => String(k) === p));
  if (unknown.length > 0) {
    return { error: `unknown runtime(s): ${unknown.join(', ')}; known: ${KNOWN_RUNTIMES.join(', ')}` };
  }
  const majors = parts.map(Number);
  if (new Set(majors).size !== majors.length) return { error: `--runtimes lists a runtime twice: "${value}"` };
  return majors;
}

/** What one runtime's child run of one section produced. */
export interface RuntimeRun {
  /** How its rows are labelled, e.g. `node 24.22.3`. */
  readonly runtime: string;
  readonly tables: readonly BenchTable[];
}

/**
 * A child run's stdout also carries whatever its section and that section's own
 * children print, so its tables travel on one line with this prefix and the
 * parent passes every other line through.
 */
export const TABLES_LINE_PREFIX = 'firelimit-bench-tables ';

/** The line a `--json` run prints: its runtime and tables. NaN and Infinity would become null in JSON, so they travel as text. */
export function tablesLine(run: RuntimeRun): string {
  const json = JSON.stringify(run, (_key, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? String(value) : value));
  return `${TABLES_LINE_PREFIX}${json}\n`;
}

/** The run on a `--json` child's stdout, or undefined when no line carried one (the child failed first). */
export function readTablesLine(stdout: string): RuntimeRun | undefined {
  const line = stdout.split('\n').find((l) => l.startsWith(TABLES_LINE_PREFIX));
  return line === undefined ? undefined : (JSON.parse(line.slice(TABLES_LINE_PREFIX.length)) as RuntimeRun);
}

/**
 * One table per measurement, each with a leading `runtime` column. Tables pair
 * by position (a section prints its tables in a fixed order); rows pair by
 * their first cell, so a row's runtimes sit on adjacent lines even when one
 * runtime skipped a row, and a ratio column still reads within its runtime.
 * Columns are the union in first-seen order; a note printed by every runtime
 * alike is kept once, labelled with all of them.
 */
export function mergeRuntimeTables(runs: readonly RuntimeRun[]): BenchTable[] {
  const count = Math.max(0, ...runs.map((r) => r.tables.length));
  const merged: BenchTable[] = [];
  for (let i = 0; i < count; i++) {
    const present = runs.flatMap((r) => (r.tables[i] === undefined ? [] : [{ runtime: r.runtime, table: r.tables[i] as BenchTable }]));
    const missing = runs.filter((r) => r.tables[i] === undefined).map((r) => `${r.runtime}: no such table in its run`);
    merged.push(mergeOne(present, missing));
  }
  return merged;
}

function mergeOne(present: readonly { runtime: string; table: BenchTable }[], missing: readonly string[]): BenchTable {
  const first = present[0]?.table as BenchTable;
  const columns: string[] = [];
  for (const { table } of present) for (const c of table.columns) if (!columns.includes(c)) columns.push(c);

  // Keyed rows per runtime: the first cell, numbered when it repeats, so duplicates pair in order.
  const keyed = present.map(({ runtime, table }) => {
    const seen = new Map<string, number>();
    const rows = new Map<string, (string | number)[]>();
    for (const row of table.rows) {
      const label = String(row[0] ?? '');
      const n = seen.get(label) ?? 0;
      seen.set(label, n + 1);
      const cells = columns.map((c) => {
        const at = table.columns.indexOf(c);
        return at < 0 ? '' : (row[at] ?? '');
      });
      rows.set(`${label}\u0000${n}`, [runtime, ...cells]);
    }
    return rows;
  });
  const order: string[] = [];
  for (const rows of keyed) for (const key of rows.keys()) if (!order.includes(key)) order.push(key);
  const rows = order.flatMap((key) => keyed.flatMap((r) => (r.has(key) ? [r.get(key) as (string | number)[]] : [])));

  const byNote = new Map<string, string[]>();
  for (const { runtime, table } of present) {
    if (table.title !== first.title) addTo(byNote, `titled "${table.title}"`, runtime);
    for (const note of table.notes ?? []) addTo(byNote, note, runtime);
  }
  const notes = [...[...byNote].map(([note, runtimes]) => `${runtimes.join(', ')}: ${note}`), ...missing];
  return { title: first.title, columns: ['runtime', ...columns], rows, ...(notes.length > 0 ? { notes } : {}) };
}

function addTo(map: Map<string, string[]>, key: string, runtime: string): void {
  const list = map.get(key) ?? [];
  list.push(runtime);
  map.set(key, list);
}
