import type { Decision } from '../library';
import type { Charge } from './resolve-charges';

/** Told of every charge a request made; metrics implement it. Labels come from the charge's config names only. */
export interface ChargeEvents {
  recordCharge(charge: Charge, decision: Decision): void;
  /** A shadow charge refused a call that the enforced limits allowed: what the shadow would have refused. */
  recordShadowRefusal(charge: Charge, decision: Decision): void;
}
