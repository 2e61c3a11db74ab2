import fs from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { knobs } from '../../src/config/knobs';

/**
 * README's configuration table and src/config/knobs.ts say the same thing:
 * every knob the service reads is documented, nothing documented is unread,
 * and a default the table states plainly (one literal, perhaps with a note in
 * parentheses; "none" or "off") is the schema's own default.
 */
interface Row {
  readonly knob: string;
  readonly defaultCell: string;
}

function readmeRows(): Row[] {
  const readme = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Configuration\n'), readme.indexOf('\n## ', readme.indexOf('\n## Configuration\n') + 1));
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    const match = /^\| `([A-Z][A-Z0-9_]*)` \|/.exec(line);
    if (match === null) continue;
    const cells = splitRow(line);
    rows.push({ knob: match[1] as string, defaultCell: (cells[cells.length - 1] as string).trim() });
  }
  return rows;
}

/** The cells of a table row; a `|` inside backticks or a link is text, not a border. */
function splitRow(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let inCode = false;
  for (const c of line.slice(1, line.lastIndexOf('|'))) {
    if (c === '`') inCode = !inCode;
    if (c === '|' && !inCode) {
      cells.push(cell);
      cell = '';
    } else cell += c;
  }
  cells.push(cell);
  return cells;
}

type Stated = { readonly kind: 'value'; readonly text: string } | { readonly kind: 'none' } | { readonly kind: 'not plain' };

/** What a default cell states plainly: `120`, `5000` (100..10000), none, off; anything else is prose this test does not judge. */
function statedDefault(cell: string, knobNames: ReadonlySet<string>): Stated {
  if (cell === 'none' || cell === 'off') return { kind: 'none' };
  const match = /^`([^`]+)`(?: \([^()]*(?:\([^()]*\)[^()]*)*\))?$/.exec(cell);
  if (match === null || knobNames.has(match[1] as string)) return { kind: 'not plain' };
  return { kind: 'value', text: match[1] as string };
}

const schemaDefault = (name: string): unknown => (knobs[name as keyof typeof knobs].schema as z.ZodType).parse(undefined);
/** "none": unset, or an empty list or map (RATE_LIMIT_TIERS: no extra tiers). */
const isNothing = (value: unknown): boolean =>
  value === undefined || (Array.isArray(value) && value.length === 0) || (value instanceof Map && value.size === 0);
const knobNames = new Set(Object.keys(knobs));
const rows = readmeRows();

describe("README's knob table and knobs.ts agree", () => {
  test('the table is found and lists knobs', () => {
    expect(rows.length).toBeGreaterThan(30);
  });

  test('every knob the service reads is in the table', () => {
    expect([...knobNames].filter((name) => !rows.some((row) => row.knob === name))).toEqual([]);
  });

  test('every knob in the table is read by the service', () => {
    expect(rows.map((row) => row.knob).filter((name) => !knobNames.has(name))).toEqual([]);
  });

  test('no knob is in the table twice', () => {
    expect(rows.map((row) => row.knob).filter((name, i, all) => all.indexOf(name) !== i)).toEqual([]);
  });

  test.each(rows.map((row) => [row.knob, row] as const))('%s: a default stated plainly is the schema default', (_name, row) => {
    if (!knobNames.has(row.knob)) return; // reported above
    const stated = statedDefault(row.defaultCell, knobNames);
    if (stated.kind === 'value') expect(String(schemaDefault(row.knob))).toBe(stated.text);
    if (stated.kind === 'none') expect(isNothing(schemaDefault(row.knob))).toBe(true);
  });
});

describe('statedDefault: what counts as plain', () => {
  test.each<[string, Stated]>([
    ['`8080`', { kind: 'value', text: '8080' }],
    ['`5000` (100..10000)', { kind: 'value', text: '5000' }],
    ['`600` (200 handshakes a minute)', { kind: 'value', text: '600' }],
    ['none', { kind: 'none' }],
    ['off', { kind: 'none' }],
    ['`RATE_LIMIT_PER_MINUTE` (the same first minute as a fixed window)', { kind: 'not plain' }],
    ['`1500` for `rtdb` (a database round trip), `500` for `redis`', { kind: 'not plain' }],
    ['`pretty` on a terminal, else `json`', { kind: 'not plain' }],
    ['every tool 1', { kind: 'not plain' }],
  ])('%s', (cell, stated) => {
    expect(statedDefault(cell, knobNames)).toEqual(stated);
  });
});
