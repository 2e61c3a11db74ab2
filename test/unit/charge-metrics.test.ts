import { Registry } from 'prom-client';
import type { Decision } from '../../src/library';
import { ChargeMetrics } from '../../src/metrics/charge-metrics';
import type { Charge } from '../../src/policies/resolve-charges';

const charge = (overrides: Partial<Charge>): Charge => ({ key: 'k', scope: 'tier', policies: [], cost: 1, source: 'tier', shadow: false, tier: 'default', tool: 'whoami', ...overrides }) as Charge;
const allowed = { allowed: true } as Decision;
const limited = { allowed: false, reason: 'limited' } as unknown as Decision;

describe('ChargeMetrics', () => {
  it('counts charges and charged units per label set as a scrape reads them', async () => {
    const registry = new Registry();
    const metrics = new ChargeMetrics(registry);
    metrics.recordCharge(charge({ cost: 2 }), allowed);
    metrics.recordCharge(charge({ cost: 3 }), allowed);
    metrics.recordCharge(charge({}), limited);
    metrics.recordCharge(charge({ scope: 'free', cost: 1 }), allowed);
    const text = await registry.metrics();
    expect(text).toContain('firelimit_charges_total{scope="tier",tier="default",tool="whoami",rule="",shadow="false",result="allowed"} 2');
    expect(text).toContain('firelimit_charges_total{scope="tier",tier="default",tool="whoami",rule="",shadow="false",result="limited"} 1');
    expect(text).toContain('firelimit_charges_total{scope="free",tier="default",tool="whoami",rule="",shadow="false",result="allowed"} 1');
    expect(text).toContain('firelimit_charged_units_total{scope="tier",tier="default",tool="whoami",rule="",shadow="false"} 5');
    // Counts made after a scrape add to what it saw.
    metrics.recordCharge(charge({ cost: 2 }), allowed);
    expect(await registry.metrics()).toContain('firelimit_charged_units_total{scope="tier",tier="default",tool="whoami",rule="",shadow="false"} 7');
  });

  it('keeps apart label sets whose values join to the same text', async () => {
    const registry = new Registry();
    const metrics = new ChargeMetrics(registry);
    metrics.recordCharge(charge({ tier: 'a\u0000b', tool: '' }), allowed);
    metrics.recordCharge(charge({ tier: 'a', tool: 'b\u0000' }), allowed);
    const values = (await registry.getSingleMetric('firelimit_charges_total')?.get())?.values ?? [];
    expect(values.map((value) => [value.labels.tier, value.labels.tool, value.value])).toEqual(
      expect.arrayContaining([
        ['a\u0000b', '', 1],
        ['a', 'b\u0000', 1],
      ]),
    );
  });
});
