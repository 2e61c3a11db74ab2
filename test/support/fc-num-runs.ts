/**
 * How many runs a property gets: its own default, or FC_NUM_RUNS for all of
 * them when set (a positive decimal integer). .ci/run sets it to 20 000 for
 * the upstream scheduler's properties in a step of their own, so a rare case
 * such as issue 19's seed -1933903487 is found in CI, not by chance in
 * `npm test`. A bad value throws rather than quietly running the default.
 */
export function fcNumRuns(defaultRuns: number): number {
  const raw = process.env.FC_NUM_RUNS;
  if (raw === undefined || raw === '') return defaultRuns;
  if (!/^[1-9]\d{0,6}$/.test(raw)) throw new RangeError(`FC_NUM_RUNS must be a positive decimal integer up to 9 999 999, got ${JSON.stringify(raw)}`);
  return Number(raw);
}
