import type { BackendName } from '../../../src/library/limiter/limit-store';
import { MemoryUpstreamQuotaStore } from '../../../src/library/memory/upstream-memory-store';
import type { UpstreamCaller } from '../../../src/library/schedule/upstream-holder';
import type { UpstreamPolicy } from '../../../src/library/schedule/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../../../src/library/schedule/upstream-quota-store';

interface Held {
  readonly key: string;
  readonly nowMs: number;
  readonly settle: () => void;
}

/**
 * An UpstreamQuotaStore for the cursor cache's unit tests: the memory store
 * decides (and commits) each call the moment it is made, as a store's atomic
 * step would, and, while `holding`, keeps the reply back until the test
 * delivers it, so a test controls what is in flight and the order replies
 * arrive in. `fail` makes the next calls reject, on delivery, having
 * committed nothing.
 */
export class HeldReplyStore implements UpstreamQuotaStore {
  readonly memory = new MemoryUpstreamQuotaStore();
  readonly held: Held[] = [];
  /** Every call made, in order. */
  readonly calls: { readonly key: string; readonly nowMs: number }[] = [];
  holding = false;
  fail: Error | undefined;
  closed = false;

  constructor(readonly backend: BackendName = 'memory') {}

  schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy): Promise<UpstreamScheduled> {
    this.calls.push({ key, nowMs });
    const error = this.fail;
    const reply = error === undefined ? this.memory.scheduleSync(key, nowMs, caller, policy) : undefined;
    if (!this.holding) return reply === undefined ? Promise.reject(error) : Promise.resolve(reply);
    return new Promise((resolve, reject) => {
      this.held.push({ key, nowMs, settle: () => (reply === undefined ? reject(error) : resolve(reply)) });
    });
  }

  /** Delivers the `index`-th reply still held (the oldest by default), then lets every callback it wakes run. */
  async deliver(index = 0): Promise<void> {
    const [held] = this.held.splice(index, 1);
    if (held === undefined) throw new Error(`no reply held at ${index}`);
    held.settle();
    await settled();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.memory.close();
  }
}

/** Lets every pending promise callback run (a macrotask turn: no time passes, nothing sleeps). */
export function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
