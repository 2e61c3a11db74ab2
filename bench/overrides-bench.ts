import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '../src/shared/logger';

import { overrideIdOf } from '../src/policies/limit-override';
import { parseStrictJson } from '../src/shared/strict-json';
import { FileOverrideStore, MAX_OVERRIDES_FILE_BYTES } from '../src/tokens/file-override-store';
import { parseOverrideRecord, toLimitOverride, type LimitOverrideRecord } from '../src/tokens/limit-override-record';
import { OverrideWatcher } from '../src/tokens/override-watcher';
import { median, type BenchTable } from './bench-table';

/**
 * What one poll of the runtime overrides costs the event loop, by file size:
 * `npm run bench -- overrides`. Each poll's work is synchronous once the file
 * is read (parse, check, compare), so its wall time is how long the instance
 * answers nothing. Rows, side by side in one run:
 *
 * - "every poll parses": JSON.parse and the record check on every poll, as
 *   before (100,000 records blocked the loop 3.4-4.7 s every 5 s);
 * - "file changed": the poll after `limits set` changed one override: the
 *   strict reader, the check, the watcher's comparison;
 * - "file unchanged": every other poll: one stat.
 *
 * The median of ROUNDS polls each.
 */
const ROUNDS = 7;
const SIZES = [1_000, 5_000, 10_000, 14_000];

function recordOf(i: number): LimitOverrideRecord {
  const tokenId = `tok_${i.toString(36).padStart(20, '0')}`;
  return { id: `token=${tokenId}`, target: { tokenId }, algorithm: 'fixed-window', limit: 10 + (i % 50), windowMs: 60_000, shadow: false, setAtMs: 1_700_000_000_000, expiresAtMs: null };
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  return timedAfter(async () => undefined, run);
}

/** The median time of `run`, each time after an untimed `prepare`. */
async function timedAfter(prepare: () => Promise<unknown>, run: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    await prepare();
    const startedAt = performance.now();
    await run();
    samples.push(performance.now() - startedAt);
  }
  return median(samples);
}

export async function runOverridesBench(): Promise<BenchTable> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-overrides-bench-'));
  const rows: (string | number)[][] = [];
  try {
    for (const size of SIZES) {
      const file = path.join(dir, `overrides-${size}.json`);
      const text = `${JSON.stringify({ version: 1, overrides: Array.from({ length: size }, (_, i) => recordOf(i)) }, null, 2)}\n`;
      await writeFile(file, text);
      // The code before, step by step: read, JSON.parse, check each record, compare each with the last view.
      let seen = new Map<string, string>();
      let index = new Map<string, unknown>();
      const before = await timed(async () => {
        const json = JSON.parse(await readFile(file, 'utf8')) as { overrides: unknown[] };
        const records = json.overrides.map((value, i) => parseOverrideRecord(value, `overrides[${i}]`));
        const next = new Map<string, unknown>();
        const nextSeen = new Map<string, string>();
        for (const record of records) {
          const id = overrideIdOf(record.target);
          const recordText = JSON.stringify(record);
          nextSeen.set(id, recordText);
          const kept = index.get(id);
          next.set(id, seen.get(id) === recordText && kept !== undefined ? kept : toLimitOverride(record));
        }
        index = next;
        seen = nextSeen;
      });
      const jsonParse = await timed(async () => JSON.parse(text));
      const strictParse = await timed(async () => parseStrictJson(text, { maxBytes: MAX_OVERRIDES_FILE_BYTES }));
      const watcher = new OverrideWatcher({ store: new FileOverrideStore(file), pollMs: 60_000, logger: silentLogger });
      await watcher.refresh();
      let version = 0;
      const changed = await timedAfter(
        // One override changed, as `limits set` writes it: a new file renamed into place.
        async () => {
          version += 1;
          await writeFile(`${file}.tmp`, text.replace('"limit": 10,', `"limit": ${10 + version},`));
          await rename(`${file}.tmp`, file);
        },
        () => watcher.refresh(),
      );
      const unchanged = await timed(() => watcher.refresh());
      rows.push([size, Math.round(Buffer.byteLength(text) / 1024), before, changed, unchanged, before / unchanged, jsonParse, strictParse]);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return {
    title: 'overrides: one poll of limit-overrides.json (ms, median of 7)',
    columns: ['records', 'KiB', 'every poll parses', 'file changed', 'file unchanged', 'before / unchanged', 'JSON.parse alone', 'strict reader alone'],
    rows,
    notes: ['every poll parses: JSON.parse + the record check per poll, as before; file changed: the first poll after a write; file unchanged: every other poll (one stat).'],
  };
}
