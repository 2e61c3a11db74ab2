/** One bad knob: which, what was wrong, and what to do about it. */
export interface ConfigProblem {
  readonly knob: string;
  readonly problem: string;
  readonly fix: string;
}

export const CONFIG_INVALID = 'ERR_FIRELIMIT_CONFIG';

/** Thrown at boot; the service refuses to start rather than run with a guessed value. */
export class ConfigError extends Error {
  readonly code = CONFIG_INVALID;
  override readonly name = 'ConfigError';

  constructor(readonly problems: readonly ConfigProblem[]) {
    super(
      [
        `firelimit cannot start: ${problems.length} configuration problem${problems.length === 1 ? '' : 's'}`,
        ...problems.map((p) => `  - ${p.knob}: ${p.problem}\n    fix: ${p.fix}`),
      ].join('\n'),
    );
  }
}
