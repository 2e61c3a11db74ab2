import type { Algorithm, AlgorithmName } from './algorithm';
import { fixedWindow, type FixedWindowState } from './fixed-window';
import { leakyBucket, type LeakyBucketState } from './leaky-bucket';
import { slidingLog, type SlidingLogState } from './sliding-log';
import { slidingWindow, type SlidingWindowState } from './sliding-window';
import { tokenBucket, type TokenBucketState } from './token-bucket';

export * from './algorithm';
export { fixedWindow, type FixedWindowState } from './fixed-window';
export { leakyBucket, type LeakyBucketState } from './leaky-bucket';
export { slidingLog, type SlidingLogState } from './sliding-log';
export { slidingWindow, type SlidingWindowState } from './sliding-window';
export { tokenBucket, type TokenBucketState } from './token-bucket';

/** The state each algorithm stores, by name. */
export interface AlgorithmStates {
  'fixed-window': FixedWindowState;
  'sliding-window': SlidingWindowState;
  'sliding-log': SlidingLogState;
  'token-bucket': TokenBucketState;
  'leaky-bucket': LeakyBucketState;
}

/**
 * An algorithm chosen at run time (from config): its state is opaque to the
 * caller, read with `parseState` and handed back to `decide`/`adjust`. Every
 * `Algorithm<S>` is one (method parameters are bivariant), so no cast is needed.
 */
export type AnyAlgorithm = Algorithm<unknown>;

export const ALGORITHMS: { readonly [K in AlgorithmName]: Algorithm<AlgorithmStates[K]> } = {
  'fixed-window': fixedWindow,
  'sliding-window': slidingWindow,
  'sliding-log': slidingLog,
  'token-bucket': tokenBucket,
  'leaky-bucket': leakyBucket,
};

export function isAlgorithmName(name: string): name is AlgorithmName {
  return Object.prototype.hasOwnProperty.call(ALGORITHMS, name);
}

/** The algorithm of that name; an unknown name throws a RangeError listing the choices (config must refuse it, never default). */
export function algorithmNamed<K extends AlgorithmName>(name: K): Algorithm<AlgorithmStates[K]>;
export function algorithmNamed(name: string): AnyAlgorithm;
export function algorithmNamed(name: string): AnyAlgorithm {
  if (!isAlgorithmName(name)) {
    throw new RangeError(`unknown rate-limit algorithm ${JSON.stringify(name)}; choose one of ${Object.keys(ALGORITHMS).join(', ')}`);
  }
  return ALGORITHMS[name];
}
