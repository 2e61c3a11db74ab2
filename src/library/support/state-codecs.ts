import { ALGORITHMS, type AlgorithmName } from '../window/algorithms';
import { algorithmOf, type PolicySet } from '../window/policy';
import { formatFixedWindowValue, parseFixedWindowValue } from '../backends/redis/lua/fixed-window';
import { formatLeakyBucketValue, parseLeakyBucketValue } from '../backends/redis/lua/leaky-bucket';
import { formatSlidingLogValue, parseSlidingLogValue } from '../backends/redis/lua/sliding-log';
import { formatSlidingWindowValue, parseSlidingWindowValue } from '../backends/redis/lua/sliding-window';
import { formatTokenBucketValue, parseTokenBucketValue } from '../backends/redis/lua/token-bucket';

/**
 * Each algorithm's state as one compact string, the form the shared stores
 * keep: a Redis value, an RTDB child. One codec per algorithm, shared by both
 * stores and by the Lua twins (which parse and write the same strings), so a
 * state means the same wherever it lives. Junk parses to null (empty).
 */
export interface StateCodec {
  format(state: unknown): string;
  parse(value: string | null): unknown;
}

/**
 * The string parsers check the shape only; the algorithm's parseState then
 * refuses what no store writes (a number past 2^53: "1:99999999999999999999"
 * had read as a token bucket updated 3 billion years from now, refusing the key
 * for good). Found by test/integration/store-contract-sets.test.ts.
 */
function checked(name: AlgorithmName, parse: (value: string | null) => unknown): (value: string | null) => unknown {
  return (value) => ALGORITHMS[name].parseState(parse(value));
}

// The format functions take their algorithm's state; a store only hands back what that algorithm produced.
export const STATE_CODECS: Readonly<Record<AlgorithmName, StateCodec>> = {
  'fixed-window': { format: (s) => formatFixedWindowValue(s as never), parse: checked('fixed-window', parseFixedWindowValue) },
  'sliding-window': { format: (s) => formatSlidingWindowValue(s as never), parse: checked('sliding-window', parseSlidingWindowValue) },
  'sliding-log': { format: (s) => formatSlidingLogValue(s as never), parse: checked('sliding-log', parseSlidingLogValue) },
  'token-bucket': { format: (s) => formatTokenBucketValue(s as never), parse: checked('token-bucket', parseTokenBucketValue) },
  'leaky-bucket': { format: (s) => formatLeakyBucketValue(s as never), parse: checked('leaky-bucket', parseLeakyBucketValue) },
};

/**
 * True for the layout every deployment had before several algorithms: one
 * fixed-window policy, whose state is the key's whole value (Redis
 * `prefix + key` = "windowNumber:count"; RTDB `{ [windowNumber]: count, e }`).
 * The default configuration keeps it, so an upgrade reads the counts it wrote.
 */
export function isSingleFixedWindow(policies: PolicySet): boolean {
  return policies.length === 1 && algorithmOf(policies[0]) === 'fixed-window';
}
