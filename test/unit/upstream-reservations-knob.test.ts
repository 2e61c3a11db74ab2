import { loadConfig } from '../../src/config/config';
import { ConfigError } from '../../src/config/config-error';
import { reservationsPerTokenOf } from '../../src/config/upstream-config';

// UPSTREAM_MAX_RESERVATIONS_PER_TOKEN: a token's share of the waiting slots (docs/adr/0053).

const URL_KNOB = { UPSTREAM_MCP_URL: 'http://127.0.0.1:3000/mcp', UPSTREAM_RATE: '2/s' };

function problemOf(value: string): string {
  try {
    loadConfig({ ...URL_KNOB, UPSTREAM_MAX_RESERVATIONS_PER_TOKEN: value });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.knob}: ${p.problem} | ${p.fix}`).join('\n');
    throw error;
  }
  throw new Error('expected the config to be refused');
}

describe('UPSTREAM_MAX_RESERVATIONS_PER_TOKEN', () => {
  it.each([
    ['unset: a quarter of the 39 slots within 60 s at 2/s', undefined, 10],
    ['set', '4', 4],
    ['the largest', '100', 100],
  ])('%s', (_what, value, perToken) => {
    const config = loadConfig({ ...URL_KNOB, ...(value === undefined ? {} : { UPSTREAM_MAX_RESERVATIONS_PER_TOKEN: value }) });
    expect(reservationsPerTokenOf(config.upstream?.quota as NonNullable<NonNullable<typeof config.upstream>['quota']>)).toBe(perToken);
  });

  it.each(['0', '101', '2.5', 'ten'])('refuses %s, naming the knob and the range', (value) => {
    const problem = problemOf(value);
    expect(problem).toContain('UPSTREAM_MAX_RESERVATIONS_PER_TOKEN');
    expect(problem).toContain('from 1 to 100');
  });
});
