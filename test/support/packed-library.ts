import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const REPO_ROOT = path.resolve(__dirname, '../..');

/** The exact version the repo has installed, so the scratch install is answered from npm's cache. */
function installedVersion(name: string): string {
  return `${name}@${JSON.parse(readFileSync(path.join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')).version}`;
}

/** `npm pack ./packages/firelimit` (its prepack builds dist/) into a fresh folder; the tarball's path. */
export async function packLibrary(): Promise<{ tarball: string; dir: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-pack-'));
  await run('npm', ['pack', './packages/firelimit', '--pack-destination', dir, '--silent'], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 });
  const tarball = readdirSync(dir).find((file) => file.endsWith('.tgz'));
  if (tarball === undefined) throw new Error(`npm pack wrote no tarball into ${dir}`);
  return { tarball: path.join(dir, tarball), dir };
}

/**
 * A scratch project outside the repo, as a user's would be: package.json of
 * its own ("type": "module"), the tarball and the named packages installed
 * by npm, nothing else of ours.
 */
export async function scratchProject(tarball: string, packages: readonly string[]): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-user-'));
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true, type: 'module' }, null, 2));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball, ...packages.map(installedVersion)], {
    cwd: dir,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 240_000,
  });
  return dir;
}

export function copyExample(example: string, dir: string, files: readonly string[]): void {
  mkdirSync(dir, { recursive: true });
  for (const file of files) writeFileSync(path.join(dir, file), readFileSync(path.join(REPO_ROOT, 'examples', example, file)));
}

/** The repo's TypeScript over the scratch project: `tsc --strict`, module nodenext, skipLibCheck off (our .d.ts are checked too). */
export async function typecheckScratch(dir: string, files: readonly string[], outDir?: string): Promise<void> {
  const tsconfig = {
    compilerOptions: {
      strict: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      skipLibCheck: false,
      types: ['node'],
      ...(outDir === undefined ? { noEmit: true } : { outDir }),
    },
    files,
  };
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  try {
    await run(process.execPath, [path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir });
  } catch (error) {
    throw new Error(`tsc failed in the scratch project:\n${(error as { stdout?: string }).stdout ?? String(error)}`);
  }
}

export interface AppProcess {
  readonly port: number;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** How long a stopped app has to close its limiter before it is killed. */
const STOP_GRACE_MS = 5_000;

/** Starts `node <file>` in the scratch project with PORT=0 and waits for its "listening on N" line. */
export function startApp(dir: string, file: string, env: Record<string, string>): Promise<AppProcess> {
  const child = spawn(process.execPath, [file], { cwd: dir, env: { PATH: process.env.PATH ?? '', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not start in 20 s:\n${output}`)), 20_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /listening on (\d+)/.exec(output);
      if (match === null) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      resolve({
        port: Number(match[1]),
        child,
        stop: async () => {
          // As Cloud Run stops an instance: SIGTERM, then SIGKILL after a grace. The examples close their limiter on
          // SIGTERM, which takes the instance out of the fleet (ADR 0067); a killed one would count as live for its
          // beat's TTL, and the next app on the same Redis would share its outage budget with ghosts.
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          const grace = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
          await exited;
          clearTimeout(grace);
        },
      });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${file} exited with ${code} before listening:\n${output}`));
    });
  });
}

export function removeDir(dir: string | undefined): void {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}
