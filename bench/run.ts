import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { printTable, type BenchTable } from './bench-table';
import { runMemoryBench } from './memory-bench';

/**
 * `npm run bench [-- section ...]`: runs the named sections (default: every
 * section whose file exists) and prints one table each, after the machine.
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

export async function main(argv: readonly string[]): Promise<number> {
  const requested = argv.filter((a) => a !== '--');
  const unknown = requested.filter((name) => !SECTIONS.some((s) => s.name === name));
  if (unknown.length > 0) {
    console.error(`unknown bench section(s): ${unknown.join(', ')}; known: ${SECTIONS.map((s) => s.name).join(', ')}`);
    return 2;
  }
  const explicit = requested.length > 0;
  const selected = explicit ? SECTIONS.filter((s) => requested.includes(s.name)) : SECTIONS;

  process.stdout.write(`${machineLine()}\n\n`);
  // The library unrefs its deadline timers (a limiter must never hold a process open), so a section awaiting a
  // frozen store has nothing else keeping the event loop alive, and node exited 0 mid-run, the table unprinted
  // (the admission section did). This handle keeps the run alive until every section has printed.
  const keepAlive = setInterval(() => undefined, 60_000);
  let failures = 0;
  for (const section of selected) {
    const runner = await loadRunner(section);
    if (typeof runner === 'string') {
      // Asked for by name and missing is an error; missing from "all" is just reported.
      (explicit ? console.error : console.log)(runner);
      if (explicit) failures++;
      continue;
    }
    try {
      const tables = await runner();
      for (const table of Array.isArray(tables) ? tables : [tables]) printTable(table as BenchTable);
    } catch (error) {
      failures++;
      console.error(`section "${section.name}" failed:`, error);
    }
  }
  clearInterval(keepAlive);
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
