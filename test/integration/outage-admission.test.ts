import { ADMISSION_POLICY, measureAdmission, type AdmissionBackend } from '../support/outage-admission';
import { redisAdmissionBackend, rtdbAdmissionBackend } from '../support/admission-backends';

// Before outage accounting, two instances with an outage inside one window
// admitted 28-29 calls at a limit of 10 (35 when the database restarted
// empty): each local window started from zero and the shared window never
// learned what was granted locally.

const figures: Record<string, unknown> = {};
afterAll(() => console.info(`outage admission (limit ${ADMISSION_POLICY.limit}, 2 instances): ${JSON.stringify(figures)}`));

describe.each([
  ['redis', redisAdmissionBackend],
  ['rtdb', rtdbAdmissionBackend],
] as const)('%s: a window with an outage inside it, two instances', (name, start) => {
  let backend: AdmissionBackend & { close(): Promise<void> };
  beforeAll(async () => {
    backend = await start();
  });
  afterAll(async () => {
    await backend?.close();
  });

  test('each counting alone (outage share off): admits no more than instances x limit, and nothing once the store is back', async () => {
    const result = await measureAdmission(backend, { before: [2, 2], during: 20, after: 10, restart: false, share: 'instance' });
    figures[`${name}_frozen`] = result;
    expect(result.admitted).toBeLessThanOrEqual(result.bound);
    expect(result.admitted).toBeLessThanOrEqual(result.aim);
    expect(result.afterRecovery).toBe(0);
  });

  test('with the fleet share (the default): during the outage each instance admits only its share of what it saw left', async () => {
    const result = await measureAdmission(backend, { before: [2, 2], during: 20, after: 10, restart: false });
    figures[`${name}_frozen_share`] = result;
    // Both counted each other by heartbeat (ADR 0067).
    expect(result.fleetCounted).toBe(2);
    expect(result.beforeOutage + result.duringOutage).toBeLessThanOrEqual(result.shareAim);
    // After recovery an instance's grants reach the shared count when it next reaches the store (ADR 0009), so one
    // that resumes first may still admit what the other granted and has not written back: the window stays within aim.
    expect(result.admitted).toBeLessThanOrEqual(result.aim);
  });

  test('a store that restarts empty relearns the window from the instances: still within the bound', async () => {
    const result = await measureAdmission(backend, { before: [2, 2], during: 20, after: 10, restart: true, share: 'instance' });
    figures[`${name}_restarted_empty`] = result;
    expect(result.admitted).toBeLessThanOrEqual(result.bound);
    expect(result.afterRecovery).toBe(0);
  });
});
