import { ConfigError } from '../config/config-error';
import { loadOperatorConfig, type OperatorConfig } from '../config/operator-config';

/** What a command writes to: stdout for its answer, stderr for everything else. */
export interface CliStreams {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/**
 * Runs a command's entry when its file is executed directly (`tsx src/cli/...`,
 * `node dist/src/cli/...`): the exit code it returns, or a failure with the
 * stack on stderr for what it did not expect. Never on stdout, which `--json`
 * keeps for one JSON value.
 */
export function runAsMain(run: (argv: string[], env: NodeJS.ProcessEnv, io: CliStreams) => Promise<number>): void {
  run(process.argv.slice(2), process.env, process).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = EXIT_FAILURE;
    },
  );
}

/**
 * The configuration the command runs with (only the knobs operator commands
 * read: operator-config.ts), or undefined once a bad one has been reported on
 * stderr (the boot's own message and fix).
 */
export function configOrReport(env: NodeJS.ProcessEnv, cwd: string | undefined, io: CliStreams): OperatorConfig | undefined {
  try {
    return loadOperatorConfig(env, { cwd });
  } catch (error) {
    if (error instanceof ConfigError) {
      io.stderr.write(`${error.message}\n`);
      return undefined;
    }
    throw error;
  }
}
