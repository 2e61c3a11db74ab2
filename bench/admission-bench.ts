import { redisAdmissionBackend, rtdbAdmissionBackend } from '../test/support/admission-backends';
import { ADMISSION_POLICY, measureAdmission, type AdmissionScenario } from '../test/support/outage-admission';
import type { BenchTable } from './bench-table';

const SCENARIOS: readonly (readonly [string, AdmissionScenario])[] = [
  ['frozen mid-window (SIGSTOP), 2+2 calls before', { before: [2, 2], during: 20, after: 10, restart: false }],
  ['restarted empty mid-window, 2+2 calls before', { before: [2, 2], during: 20, after: 10, restart: true }],
  ['frozen at the window start, nothing before', { before: [0, 0], during: 20, after: 10, restart: false }],
  ['frozen late in the window, 4+4 calls before', { before: [4, 4], during: 20, after: 10, restart: false }],
];

/**
 * `npm run bench -- admission`: calls admitted in one window with the shared
 * store failing inside it, two instances, limit 10, on the real servers the
 * tests use. Counts, not timings: the same on any machine.
 */
export async function runAdmissionBench(): Promise<BenchTable> {
  const rows: (string | number)[][] = [];
  for (const start of [redisAdmissionBackend, rtdbAdmissionBackend]) {
    const backend = await start();
    try {
      for (const [name, scenario] of SCENARIOS.flatMap(([name, scenario]) => (['fleet', 'instance'] as const).map((share) => [name, { ...scenario, share }] as const))) {
        const r = await measureAdmission(backend, scenario);
        rows.push([backend.name, name, scenario.share, r.fleetCounted, r.beforeOutage, r.duringOutage, r.afterRecovery, r.admitted, r.shareAim, r.aim, r.bound]);
      }
    } finally {
      await backend.close();
    }
  }
  return {
    title: `Outage admission: calls admitted in one window, 2 instances, limit ${ADMISSION_POLICY.limit}, fail-open`,
    columns: ['backend', 'scenario', 'outage share', 'fleet counted', 'before', 'during outage', 'after recovery', 'admitted', 'share aim', 'aim without the share', 'bound'],
    rows,
    notes: [
      'aim = shared count before the outage + sum over instances of (limit - the count that instance last saw): each instance counting alone (RATE_LIMIT_OUTAGE_SHARE=instance)',
      'share aim = the same with each instance admitting max(1, floor((limit - seen) / fleet counted)) (ADR 0067, the default)',
      'bound = instances x limit (the documented fail-open worst case)',
      'before outage accounting the first two rows admitted 28-29 and 35',
    ],
  };
}
