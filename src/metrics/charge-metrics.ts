import { Counter, type Registry } from 'prom-client';
import { DeferredCounts } from './deferred-counts';
import type { Decision } from '../library';
import type { ChargeEvents } from '../policies/charge-events';
import type { Charge } from '../policies/resolve-charges';

type ChargeLabels = 'scope' | 'tier' | 'tool' | 'rule' | 'shadow' | 'result';

/**
 * Charges per scope, with the tier, tool and rule they were made under.
 * Every label value is a name from the configuration (a tier, a tool a rule
 * or override names, a rule), never a token id or an address, so the
 * series stay few and say nothing about who called.
 */
export class ChargeMetrics implements ChargeEvents {
  private readonly charges: Counter<ChargeLabels>;
  private readonly units: Counter<Exclude<ChargeLabels, 'result'>>;
  private readonly shadowRefusals: Counter<'scope' | 'tier' | 'tool' | 'rule'>;
  private readonly pendingCharges = new DeferredCounts<ChargeLabels>(['scope', 'tier', 'tool', 'rule', 'shadow', 'result']);
  private readonly pendingUnits = new DeferredCounts<Exclude<ChargeLabels, 'result'>>(['scope', 'tier', 'tool', 'rule', 'shadow']);

  constructor(registry: Registry) {
    const registers = [registry];
    const { pendingCharges, pendingUnits } = this;
    this.charges = new Counter({
      name: 'firelimit_charges_total',
      help: 'Limiter charges a request made, by scope (tier, free, rule, tool), tier, tool and rule (empty when none), whether shadow, and result (allowed, limited, unavailable).',
      labelNames: ['scope', 'tier', 'tool', 'rule', 'shadow', 'result'],
      registers,
      collect() {
        pendingCharges.flushInto(this);
      },
    });
    this.units = new Counter({
      name: 'firelimit_charged_units_total',
      help: 'Units charged (the tier counts cost units; free, rule and tool scopes count calls), by scope, tier, tool, rule and shadow.',
      labelNames: ['scope', 'tier', 'tool', 'rule', 'shadow'],
      registers,
      collect() {
        pendingUnits.flushInto(this);
      },
    });
    this.shadowRefusals = new Counter({
      name: 'firelimit_shadow_refusals_total',
      help: 'Calls a shadow rule or override would have refused (they were allowed), by scope, tier, tool and rule.',
      labelNames: ['scope', 'tier', 'tool', 'rule'],
      registers,
    });
  }

  recordCharge(charge: Charge, decision: Decision): void {
    const labels = labelsOf(charge);
    const shadow = charge.shadow ? 'true' : 'false';
    const result = decision.allowed ? 'allowed' : decision.reason === 'backend_unavailable' ? 'unavailable' : 'limited';
    const key = `${labels.scope}\u0000${labels.tier}\u0000${labels.tool}\u0000${labels.rule}\u0000${shadow}`;
    this.pendingCharges.add(`${key}\u0000${result}`, { ...labels, shadow, result }, 1);
    if (decision.allowed && charge.cost > 0) this.pendingUnits.add(key, { ...labels, shadow }, charge.cost);
  }

  recordShadowRefusal(charge: Charge): void {
    this.shadowRefusals.inc(labelsOf(charge));
  }
}

function labelsOf(charge: Charge): { scope: string; tier: string; tool: string; rule: string } {
  return { scope: charge.scope, tier: charge.tier, tool: charge.tool ?? '', rule: charge.rule ?? '' };
}
