import { Gauge, type Registry } from 'prom-client';
import type { FleetEstimate } from '../library';

/**
 * `firelimit_fleet_instances`: the live instances this one counts on the
 * shared store (ADR 0067), the divisor of each key's budget during an
 * outage. Read at scrape time, without starting a heartbeat.
 */
export function registerFleetGauge(registry: Registry, fleet: Pick<FleetEstimate, 'instances'>): Gauge {
  return new Gauge({
    name: 'firelimit_fleet_instances',
    help: 'Live instances this instance counts from the heartbeats in the shared store; during an outage each admits its share of a key\'s remaining budget, divided by this (RATE_LIMIT_OUTAGE_SHARE=fleet).',
    registers: [registry],
    collect() {
      this.set(fleet.instances);
    },
  });
}
