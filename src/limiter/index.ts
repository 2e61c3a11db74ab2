export { decideFixedWindow, windowNumberAt, type FixedWindowState, type FixedWindowResult } from './algorithms/fixed-window';
export { createRateLimiter, DEFAULT_TIMEOUT_MS, type RateLimiterOptions } from './create-rate-limiter';
export type { Decision, DecisionReason, WindowDecision } from './decision';
export { assertValidKey, encodeKeyPart, InvalidKeyError, INVALID_KEY } from './key';
export { assertValidPolicy, type RateLimitPolicy } from './policy';
export type { ConsumeOptions, FailurePolicy, RateLimiter } from './rate-limiter';
export type { BackendName, WindowStore } from './window-store';
