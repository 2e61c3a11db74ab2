import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { printTable, type BenchTable } from './bench-table';
import { runMemoryBench } from './memory-bench';
import { parseRuntimes, tablesLine } from './runtime-tables';
import { resolveRuntimes, runOnRuntimes, type Runtime } from './runtimes';

/**
 * `npm run bench [-- section ...]`: runs the named sections (default: every
 * section whose file exists) and prints one table each, after the machine.
 * `--runtimes=20,24` (or BENCH_RUNTIMES=20,24) runs each section once per
 * runtime, each in a child, and prints one table per measurement with a
 * `runtime` column (bench/runtimes.ts); `--json` is that child's mode: no
 * machine line, the tables on one line for the parent.
 */

interface Section {
  readonly name: string;
  /** Module beside this file, without extension; undefined for the built-in memory section. */
  readonly file?: string;
  readonly exportName: string;
}

const SECTIONS: readonly Section[] = [
  { name: 'memory', exportName: 'runMemoryBench' },
  { name: 'rtdb', file: 'rtdb-bench', exportName: 'runRtdbBench' },
  { name: 'redis', file: 'redis-bench', exportName: 'runRedisBench' },
  { name: 'redis-client', file: 'redis-client-bench', exportName: 'runRedisClientBench' },
  { name: 'sqlite', file: 'sqlite-bench', exportName: 'runSqliteBench' },
  { name: 'http', file: 'http-bench', exportName: 'runHttpBench' },
  { name: 'outage', file: 'outage-bench', exportName: 'runOutageBench' },
  { name: 'outage-request', file: 'outage-request-bench', exportName: 'runOutageRequestBench' },
  { name: 'admission', file: 'admission-bench', exportName: 'runAdmissionBench' },
  { name: 'attack', file: 'attack-bench', exportName: 'runAttackBench' },
  { name: 'algorithms', file: 'algorithms-bench', exportName: 'runAlgorithmsBench' },
  { name: 'log-bytes', file: 'sliding-log-bytes', exportName: 'runSlidingLogBytes' },
  { name: 'upstream-hot-key', file: 'upstream-hot-key-bench', exportName: 'runUpstreamHotKeyBench' },
  { name: 'hot-key', file: 'hot-key-bench', exportName: 'runHotKeyBench' },
  { name: 'mcp-call', file: 'mcp-call-bench', exportName: 'runMcpCallBench' },
  { name: 'overrides', file: 'overrides-bench', exportName: 'runOverridesBench' },
  { name: 'sign-in', file: 'sign-in-bench', exportName: 'runSignInBench' },
  { name: 'gateway', file: 'gateway-bench', exportName: 'runGatewayBench' },
  { name: 'gateway-everything', file: 'gateway-everything-bench', exportName: 'runGatewayEverythingBench' },
];

/** A section prints one table, or several when it measures more than one thing (upstream-hot-key: Redis, then RTDB). */
type Runner = () => Promise<BenchTable | readonly BenchTable[]>;

function sectionFileExists(file: string): boolean {
  return ['.ts', '.js'].some((ext) => existsSync(path.join(__dirname, `${file}${ext}`)));
}

async function loadRunner(section: Section): Promise<Runner | string> {
  if (section.file === undefined) return runMemoryBench;
  if (!sectionFileExists(section.file)) {
    return `section "${section.name}" skipped: bench/${section.file}.ts does not exist yet`;
  }
  // A variable specifier keeps the type checker from requiring files others are still writing.
  const specifier = `./${section.file}`;
  const mod = (await import(specifier)) as Record<string, unknown>;
  const runner = mod[section.exportName];
  if (typeof runner !== 'function') {
    return `section "${section.name}" skipped: bench/${section.file}.ts does not export ${section.exportName}()`;
  }
  return runner as Runner;
}

function machineLine(): string {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() ?? 'unknown cpu';
  return `machine: ${model}, ${cpus.length} cores (${os.availableParallelism()} available), node ${process.version}, ${os.platform()} ${os.arch()}`;
}

interface Options {
  readonly sections: readonly string[];
  readonly json: boolean;
  /** Undefined: run in this process, as before --runtimes existed. */
  readonly runtimes?: readonly number[];
}

function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Options | { readonly error: string } {
  const args = argv.filter((a) => a !== '--');
  const flag = args.find((a) => a === '--runtimes' || a.startsWith('--runtimes='));
  const value = flag === undefined ? env['BENCH_RUNTIMES'] : flag.slice('--runtimes='.length);
  const sections = args.filter((a) => a !== '--json' && a !== flag);
  const json = args.includes('--json');
  if (value === undefined) return { sections, json };
  if (json) return { error: '--json runs one runtime, the one running it; it does not combine with --runtimes or BENCH_RUNTIMES' };
  const runtimes = parseRuntimes(value);
  return 'error' in runtimes ? runtimes : { sections, json, runtimes };
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const options = parseOptions(argv, env);
  if ('error' in options) {
    console.error(options.error);
    return 2;
  }
  const requested = options.sections;
  const unknown = requested.filter((name) => !SECTIONS.some((s) => s.name === name));
  if (unknown.length > 0) {
    console.error(`unknown bench section(s): ${unknown.join(', ')}; known: ${SECTIONS.map((s) => s.name).join(', ')}`);
    return 2;
  }
  const explicit = requested.length > 0;
  const selected = explicit ? SECTIONS.filter((s) => requested.includes(s.name)) : SECTIONS;

  let runtimes: readonly Runtime[] | undefined;
  if (options.runtimes !== undefined) {
    const resolved = resolveRuntimes(options.runtimes);
    if ('error' in resolved) {
      console.error(resolved.error);
      return 2;
    }
    runtimes = resolved;
  }

  if (!options.json) process.stdout.write(`${machineLine()}\n`);
  if (runtimes !== undefined) process.stdout.write(`runtimes: ${runtimes.map((r) => `node ${r.major} (${r.bin})`).join(', ')}\n`);
  if (!options.json) process.stdout.write('\n');
  // The library unrefs its deadline timers (a limiter must never hold a process open), so a section awaiting a
  // frozen store has nothing else keeping the event loop alive, and node exited 0 mid-run, the table unprinted
  // (the admission section did). This handle keeps the run alive until every section has printed.
  const keepAlive = setInterval(() => undefined, 60_000);
  let failures = 0;
  const tablesOut: BenchTable[] = [];
  for (const section of selected) {
    if (runtimes !== undefined && (section.file === undefined || sectionFileExists(section.file))) {
      const result = await runOnRuntimes(section.name, runtimes);
      failures += result.failures;
      for (const table of result.tables) printTable(table);
      continue;
    }
    const runner = await loadRunner(section);
    if (typeof runner === 'string') {
      // Asked for by name and missing is an error; missing from "all" is just reported.
      (explicit ? console.error : console.log)(runner);
      if (explicit) failures++;
      continue;
    }
    try {
      const tables = await runner();
      for (const table of Array.isArray(tables) ? tables : [tables]) {
        if (options.json) tablesOut.push(table as BenchTable);
        else printTable(table as BenchTable);
      }
    } catch (error) {
      failures++;
      console.error(`section "${section.name}" failed:`, error);
    }
  }
  clearInterval(keepAlive);
  if (options.json) process.stdout.write(tablesLine({ runtime: `node ${process.versions.node}`, tables: tablesOut }));
  return failures === 0 ? 0 : 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
