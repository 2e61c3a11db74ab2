import type { DecisionReason } from '../../../src/library/window/decision';
import type { RateLimitPolicy } from '../../../src/library/window/policy';

/** What the test sends a limiter worker over IPC. */
export type WorkerRequest =
  | {
      readonly type: 'init';
      readonly databaseUrl: string;
      readonly rootPath: string;
      readonly policy: RateLimitPolicy;
      /** The worker's clock is fixed here, so every process decides in the same window. */
      readonly nowMs: number;
      readonly timeoutMs: number;
    }
  | {
      readonly type: 'run';
      readonly key: string;
      readonly count: number;
      /** Consumes in flight at once; the next batch starts when this one is answered. */
      readonly batch: number;
    }
  | { readonly type: 'close' };

export interface WorkerDecision {
  readonly allowed: boolean;
  readonly shared: boolean;
  readonly reason: DecisionReason;
  readonly remaining: number;
}

/** What a worker answers. */
export type WorkerReply =
  | { readonly type: 'ready' }
  | { readonly type: 'decisions'; readonly decisions: WorkerDecision[] }
  | { readonly type: 'closed' }
  | { readonly type: 'error'; readonly message: string };
