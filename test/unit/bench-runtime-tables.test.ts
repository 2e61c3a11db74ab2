import type { BenchTable } from '../../bench/bench-table';
import { mergeRuntimeTables, parseRuntimes, readTablesLine, tablesLine } from '../../bench/runtime-tables';

const table = (rows: (string | number)[][], notes?: string[]): BenchTable => ({
  title: 'decision cost',
  columns: ['implementation', 'p50 µs'],
  rows,
  ...(notes === undefined ? {} : { notes }),
});

describe('mergeRuntimeTables', () => {
  it('puts each row of every runtime on adjacent lines, labelled in a leading runtime column', () => {
    const [merged] = mergeRuntimeTables([
      { runtime: 'node 20.20.2', tables: [table([['Map', 0.06], ['store', 0.3]])] },
      { runtime: 'node 24.22.3', tables: [table([['Map', 0.05], ['store', 0.2]])] },
    ]);
    expect(merged?.columns).toEqual(['runtime', 'implementation', 'p50 µs']);
    expect(merged?.rows).toEqual([
      ['node 20.20.2', 'Map', 0.06],
      ['node 24.22.3', 'Map', 0.05],
      ['node 20.20.2', 'store', 0.3],
      ['node 24.22.3', 'store', 0.2],
    ]);
  });

  it('pairs rows by their first cell, so a row one runtime skipped does not shift the others', () => {
    const [merged] = mergeRuntimeTables([
      { runtime: 'a', tables: [table([['x', 1], ['y', 2], ['z', 3]])] },
      { runtime: 'b', tables: [table([['x', 4], ['z', 6]])] },
    ]);
    expect(merged?.rows).toEqual([
      ['a', 'x', 1],
      ['b', 'x', 4],
      ['a', 'y', 2],
      ['a', 'z', 3],
      ['b', 'z', 6],
    ]);
  });

  it('pairs repeated row labels in order of appearance', () => {
    const [merged] = mergeRuntimeTables([
      { runtime: 'a', tables: [table([['x', 1], ['x', 2]])] },
      { runtime: 'b', tables: [table([['x', 3], ['x', 4]])] },
    ]);
    expect(merged?.rows.map((r) => r[2])).toEqual([1, 3, 2, 4]);
  });

  it('keeps every note, prefixed by the runtimes that printed it, once when they printed it alike', () => {
    const [merged] = mergeRuntimeTables([
      { runtime: 'a', tables: [table([['x', 1]], ['shared', 'only a'])] },
      { runtime: 'b', tables: [table([['x', 2]], ['shared', 'only b'])] },
    ]);
    expect(merged?.notes).toEqual(['a, b: shared', 'a: only a', 'b: only b']);
  });

  it('takes the union of columns, leaving a cell empty where a runtime had no such column', () => {
    const [merged] = mergeRuntimeTables([
      { runtime: 'a', tables: [table([['x', 1]])] },
      { runtime: 'b', tables: [{ title: 'decision cost', columns: ['implementation', 'p50 µs', 'p99 µs'], rows: [['x', 2, 9]] }] },
    ]);
    expect(merged?.columns).toEqual(['runtime', 'implementation', 'p50 µs', 'p99 µs']);
    expect(merged?.rows).toEqual([
      ['a', 'x', 1, ''],
      ['b', 'x', 2, 9],
    ]);
  });

  it('merges tables by position and notes a runtime that printed fewer tables', () => {
    const merged = mergeRuntimeTables([
      { runtime: 'a', tables: [table([['x', 1]]), { ...table([['y', 2]]), title: 'second' }] },
      { runtime: 'b', tables: [table([['x', 3]])] },
    ]);
    expect(merged.map((t) => t.title)).toEqual(['decision cost', 'second']);
    expect(merged[1]?.rows).toEqual([['a', 'y', 2]]);
    expect(merged[1]?.notes).toEqual(['b: no such table in its run']);
  });

  it('keeps the first title and notes a runtime whose title differs', () => {
    const [merged] = mergeRuntimeTables([
      { runtime: 'a', tables: [table([['x', 1]])] },
      { runtime: 'b', tables: [{ ...table([['x', 2]]), title: 'other' }] },
    ]);
    expect(merged?.title).toBe('decision cost');
    expect(merged?.notes).toEqual(['b: titled "other"']);
  });
});

describe('parseRuntimes', () => {
  it('reads majors in the order given', () => {
    expect(parseRuntimes('24,20')).toEqual([24, 20]);
  });

  it.each(['', '20,', '20,22', 'node24', '20,20'])('refuses %j with a reason', (value) => {
    expect(parseRuntimes(value)).toEqual({ error: expect.any(String) });
  });
});

describe('tablesLine and readTablesLine', () => {
  it('carry a run through a stdout that has other lines, non-finite numbers as text', () => {
    const run = { runtime: 'node 24.22.3', tables: [table([['x', Number.NaN], ['y', 1.5]])] };
    const stdout = `progress\n${tablesLine(run)}`;
    expect(readTablesLine(stdout)?.tables[0]?.rows).toEqual([['x', 'NaN'], ['y', 1.5]]);
  });

  it('read nothing from a stdout without the line', () => {
    expect(readTablesLine('crashed\n')).toBeUndefined();
  });
});
