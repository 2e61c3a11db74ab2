import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BenchTable } from './bench-table';
import { mergeRuntimeTables, readTablesLine, TABLES_LINE_PREFIX, type RuntimeRun } from './runtime-tables';

/**
 * The process half of `npm run bench -- --runtimes=20,24`: finds each
 * runtime's node binary and runs a section once per runtime, each in its own
 * child (`bench/run.ts --json <section>` under that binary), one after the
 * other: the VM has two cores, and two runtimes measured at once would each
 * measure the other.
 */

export interface Runtime {
  readonly major: number;
  readonly bin: string;
}

const INSTALL_SCRIPT = path.join(__dirname, '..', 'scripts', 'install-node-24.sh');

/**
 * The binary for each major, or why one cannot be had. The running node serves
 * its own major (Node 20 in CI and here); Node 24 is where
 * scripts/install-node-24.sh puts it, asked with --where so its path lives in
 * one place and nothing is installed behind the bench's back.
 */
export function resolveRuntimes(majors: readonly number[]): readonly Runtime[] | { readonly error: string } {
  const running = Number(process.versions.node.split('.')[0]);
  const runtimes: Runtime[] = [];
  for (const major of majors) {
    if (major === running) {
      runtimes.push({ major, bin: process.execPath });
    } else if (major === 24) {
      const where = spawnSync('bash', [INSTALL_SCRIPT, '--where'], { encoding: 'utf8' });
      if (where.status !== 0) {
        return { error: `--runtimes: Node 24 is not installed (${where.stderr.trim() || `scripts/install-node-24.sh --where exited ${where.status ?? where.signal}`}); install it with \`bash scripts/install-node-24.sh\`` };
      }
      runtimes.push({ major, bin: path.join(where.stdout.trim(), 'node') });
    } else {
      return { error: `--runtimes: runtime ${major} is the node running the bench, and this is node ${process.version}; run \`npm run bench\` under Node ${major}` };
    }
  }
  return runtimes;
}

/**
 * Runs `section` on each runtime in turn and returns its merged tables, with
 * how many runtimes failed. A runtime that fails leaves the others' rows;
 * its child's stderr already said why.
 */
export async function runOnRuntimes(section: string, runtimes: readonly Runtime[]): Promise<{ tables: BenchTable[]; failures: number }> {
  const runs: RuntimeRun[] = [];
  let failures = 0;
  for (const runtime of runtimes) {
    const run = await runChild(section, runtime);
    if (run === undefined) failures++;
    else runs.push(run);
  }
  return { tables: runs.length === 0 ? [] : mergeRuntimeTables(runs), failures };
}

/** One section under one binary; the section's own output goes to stderr, the tables line is kept. */
function runChild(section: string, runtime: Runtime): Promise<RuntimeRun | undefined> {
  process.stderr.write(`section "${section}" on node ${runtime.major} (${runtime.bin})\n`);
  // tsx as the child's loader, not tsx's CLI, which would put a grandchild between us and the run.
  const child = spawn(runtime.bin, ['--import', pathToFileURL(require.resolve('tsx')).href, path.join(__dirname, 'run.ts'), '--json', section], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (!line.startsWith(TABLES_LINE_PREFIX)) process.stderr.write(`${line}\n`);
  });
  return new Promise((resolve) => {
    child.once('error', (error) => console.error(`section "${section}" on node ${runtime.major}: ${error.message}`));
    child.once('close', (code, signal) => {
      if (pending !== '' && !pending.startsWith(TABLES_LINE_PREFIX)) process.stderr.write(`${pending}\n`);
      const run = readTablesLine(stdout);
      if (code !== 0 || run === undefined) {
        console.error(`section "${section}" on node ${runtime.major} failed: exited ${code ?? signal}`);
        resolve(undefined);
      } else {
        resolve(run);
      }
    });
  });
}
