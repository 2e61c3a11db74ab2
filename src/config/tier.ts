import type { PolicySet } from '../library';

/**
 * A named group of tokens and the limits each of its tokens is held to, all
 * or nothing (e.g. a burst of 10 a second, 120 a minute and 10,000 a day).
 * Every token's record names one tier.
 */
export interface Tier {
  readonly name: string;
  readonly policies: PolicySet;
}
