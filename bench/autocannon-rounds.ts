import autocannon from 'autocannon';

/**
 * Load for the benches whose servers run in child processes (bench-child.ts):
 * one autocannon run with the server's CPU read on either side, and rounds of
 * such runs interleaved over every cell, so drift on a shared machine hits
 * each cell alike.
 */

export interface LoadResult {
  readonly rps: number;
  /** Server CPU per request: unlike req/s, barely moved by whatever else the shared machine runs. */
  readonly cpuUsPerRequest: number;
  readonly failures: number;
}

/** One autocannon run of `options` against a server whose CPU time (µs so far) `cpuUs` reads. */
export async function loadWithCpu(cpuUs: () => Promise<number>, options: autocannon.Options): Promise<LoadResult> {
  const cpuBefore = await cpuUs();
  const result = await autocannon(options);
  const cpuAfter = await cpuUs();
  return {
    rps: result.requests.average,
    cpuUsPerRequest: (cpuAfter - cpuBefore) / Math.max(1, result.requests.total),
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

export interface RoundSamples<K> {
  /** Per cell, one req/s a round, so each can be set against another cell's from the same round. */
  readonly rps: ReadonlyMap<K, number[]>;
  /** Per cell, server µs per request, one a round. */
  readonly cpu: ReadonlyMap<K, number[]>;
  /** Non-2xx responses, errors and timeouts across all rounds. */
  readonly failures: number;
}

/** `rounds` rounds of `load` over every cell, the order rotated each round so no cell always follows another's garbage. */
export async function interleavedRounds<C, K>(cells: readonly C[], keyOf: (cell: C) => K, rounds: number, load: (cell: C) => Promise<LoadResult>): Promise<RoundSamples<K>> {
  const rps = new Map<K, number[]>(cells.map((c) => [keyOf(c), []]));
  const cpu = new Map<K, number[]>(cells.map((c) => [keyOf(c), []]));
  let failures = 0;
  for (let round = 0; round < rounds; round++) {
    for (let j = 0; j < cells.length; j++) {
      const cell = cells[(round + j) % cells.length] as C;
      const r = await load(cell);
      rps.get(keyOf(cell))?.push(r.rps);
      cpu.get(keyOf(cell))?.push(r.cpuUsPerRequest);
      failures += r.failures;
    }
  }
  return { rps, cpu, failures };
}
