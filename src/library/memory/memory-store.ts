import type { Adjustment, AnyAlgorithm } from '../window/algorithms';
import { compiledSetOf, type CompiledPolicySet } from '../window/compiled-policy-set';
import { adjustSet, assertValidAdjustments, compiledExpiresAtMs, decideOne, decideSet } from '../window/decide-set';
import type { WindowDecision } from '../window/decision';
import { FixedWindowStep, NO_WINDOW, type FixedWindowState } from '../window/fixed-window';
import { assertValidKey } from '../window/key';
import type { LimitStore, StoreDecision } from '../limiter/limit-store';
import type { PolicySet, RateLimitPolicy } from '../window/policy';

/** The same margin as DEFAULT_REDIS_TTL_MARGIN_MS: a clock may lag the newest one seen by this much. */
export const DEFAULT_MEMORY_LAG_MARGIN_MS = 10_000;

/**
 * A fixed-window state the store owns and updates in place: the hot path
 * (decideOneSync) copies FixedWindowStep's outcome into it instead of
 * allocating a new state on every call, as express-rate-limit does with its
 * entry (issue 22). It never leaves the store: a read for anyone else gets a
 * copy (stateIn), because a state handed out must not change afterwards.
 * Declared here, not imported: under tsx every read of an imported binding
 * is a getter call.
 */
class HeldWindow implements FixedWindowState {
  constructor(
    public windowNumber: number,
    public count: number,
  ) {}
}

/** One key's states, by slot (stateSlotOf): a tier's several policies live side by side. */
type Slots = Record<string, unknown>;

/**
 * Limit states in this process only. Two generations of maps rotate every
 * `rotationMs` (the longest a written state has taken to expire, plus the lag margin): a key not
 * touched for two rotations is dropped wholesale, so memory is bounded by the
 * keys active lately, with no per-key timers and no sweep. A state written at
 * t expires by t + rotationMs, before its generation is dropped, so eviction
 * never forgets a live count.
 */
export class MemoryWindowStore implements LimitStore {
  readonly backend = 'memory' as const;
  readonly shared = false;

  private current = new Map<string, Slots>();
  private previous = new Map<string, Slots>();
  private rotationMs = 0;
  private generationStartMs = Number.NEGATIVE_INFINITY;
  /** The latest expiry written into the current generation: once it is the previous one, it must last until then. */
  private currentExpiresAtMs = Number.NEGATIVE_INFINITY;
  /** What decideOneSync answers for a fixed window: filled in again by each call, never allocated per call. */
  private readonly step = new FixedWindowStep();

  /** @param lagMarginMs how long past its expiry a state is kept for a clock that steps back. */
  constructor(private readonly lagMarginMs: number = DEFAULT_MEMORY_LAG_MARGIN_MS) {
    if (!Number.isSafeInteger(lagMarginMs) || lagMarginMs < 0) {
      throw new RangeError(`lagMarginMs must be a non-negative integer, got ${lagMarginMs}`);
    }
  }

  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    // Not an async function: it would add a second promise per decision.
    try {
      return Promise.resolve(this.consumeSync(key, nowMs, policies, cost));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    try {
      // Like the RTDB and Redis stores, refuse a bad adjustment instead of writing it (a NaN delta
      // would turn the count into NaN). Here, not in adjustSync: that is the limiter's own path,
      // fed only by states its stores produced, and runs on every call during an outage.
      assertValidAdjustments(policies, adjustments);
      this.adjustSync(key, nowMs, policies, adjustments);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Synchronous twin of consume, for the local fallback path that must not wait. */
  consumeSync(key: string, nowMs: number, policies: PolicySet, cost: number): StoreDecision {
    const set = compiledSetOf(policies);
    const slots = this.slotsOf(key, nowMs);
    // One policy (the common case): its state straight from its slot, no states array in between.
    const result =
      set.size === 1
        ? decideOne(set, stateIn(slots, set.slots[0] as string, set.algorithms[0] as AnyAlgorithm), nowMs, cost)
        : decideSet(readStates(slots, set), nowMs, policies, cost);
    if (result.changed) this.write(key, slots, nowMs, set, result.states);
    return result;
  }

  /**
   * consumeSync of a one-policy set, answering the policy's own decision: no
   * states or decisions arrays and no set result, for the limiter's hot path.
   * `checkNewKey`: the key is validated here (assertValidKey) when the store
   * does not hold it yet; a held key was validated when it was first written,
   * so a known client's decision skips the scan of its key.
   *
   * A fixed window spending units is decided in place (decideHeldWindow), and
   * the answer is this store's own reused object: read it before the next call.
   */
  decideOneSync(key: string, nowMs: number, set: CompiledPolicySet, cost: number, checkNewKey = false): WindowDecision {
    const slots = this.slotsOf(key, nowMs);
    if (slots === undefined && checkNewKey) assertValidKey(key);
    const slot = set.slots[0] as string;
    const algorithm = set.algorithms[0] as AnyAlgorithm;
    const policy = set.policies[0];
    // A cost-0 read takes the general path: fixedWindow.decide answers it by a rule of its own.
    // The name, not the algorithm value, is compared: under tsx every imported binding read is a getter call.
    if (set.algorithmNames[0] === 'fixed-window' && cost > 0) {
      const step = this.decideHeldWindow(key, slots, slot, nowMs, policy, cost);
      if (step.changed) this.noteExpiry(algorithm.expiresAtMs(step, policy), nowMs);
      return step;
    }
    const { decision, next } = algorithm.decide(stateIn(slots, slot, algorithm), nowMs, policy, cost);
    if (next !== null) {
      this.slotsFor(key, slots)[slot] = algorithm.pack === undefined ? next : algorithm.pack(next);
      this.noteExpiry(algorithm.expiresAtMs(next, policy), nowMs);
    }
    return decision;
  }

  /**
   * The fixed window in `slot` decided by FixedWindowStep (its arithmetic, not
   * a copy of it), whose outcome is copied into the slot's HeldWindow: no
   * object is allocated once the key holds one.
   */
  private decideHeldWindow(key: string, slots: Slots | undefined, slot: string, nowMs: number, policy: RateLimitPolicy, cost: number): FixedWindowStep {
    const { step } = this;
    const { limit, windowMs } = policy;
    const held = slots === undefined ? undefined : slots[slot];
    if (isHeldWindow(held)) {
      if (step.decide(held.windowNumber, held.count, nowMs, limit, windowMs, cost).changed) {
        held.windowNumber = step.windowNumber;
        held.count = step.count;
      }
      return step;
    }
    // Empty, or a plain state the general path wrote: from now on the slot holds a HeldWindow.
    const state = (held ?? null) as FixedWindowState | null;
    if (state === null) step.decide(NO_WINDOW, 0, nowMs, limit, windowMs, cost);
    else step.decide(state.windowNumber, state.count, nowMs, limit, windowMs, cost);
    if (step.changed) this.slotsFor(key, slots)[slot] = new HeldWindow(step.windowNumber, step.count);
    return step;
  }

  adjustSync(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): void {
    const set = compiledSetOf(policies);
    const slots = this.slotsOf(key, nowMs);
    const next = adjustSet(readStates(slots, set), nowMs, policies, adjustments);
    if (next !== null) this.write(key, slots, nowMs, set, next);
  }

  /** The states held for `key` under `policies` (null: empty), without touching them. */
  peek(key: string, policies: PolicySet): unknown[] {
    return readStates(this.current.get(key) ?? this.previous.get(key), compiledSetOf(policies));
  }

  /** The key's slots, moved into the current generation when found in the previous one. */
  private slotsOf(key: string, nowMs: number): Slots | undefined {
    this.rotate(nowMs);
    let slots = this.current.get(key);
    if (slots === undefined) {
      slots = this.previous.get(key);
      if (slots !== undefined) {
        this.previous.delete(key);
        this.current.set(key, slots);
      }
    }
    return slots;
  }

  /** The key's slots to write into: `slots` as found, or new ones in the current generation. */
  private slotsFor(key: string, slots: Slots | undefined): Slots {
    if (slots !== undefined) return slots;
    const created: Slots = {};
    this.current.set(key, created);
    return created;
  }

  private write(key: string, slots: Slots | undefined, nowMs: number, set: CompiledPolicySet, states: readonly unknown[]): void {
    const target = this.slotsFor(key, slots);
    for (let i = 0; i < set.size; i++) {
      const state = states[i] ?? null;
      const algorithm = set.algorithms[i] as AnyAlgorithm;
      target[set.slots[i] as string] = state === null || algorithm.pack === undefined ? state : algorithm.pack(state);
    }
    const setExpiryMs = compiledExpiresAtMs(states, set);
    if (setExpiryMs !== null) this.noteExpiry(setExpiryMs, nowMs);
  }

  /** A state written at nowMs that expires at setExpiryMs: the rotation must keep it that long. */
  private noteExpiry(setExpiryMs: number, nowMs: number): void {
    // Kept lagMarginMs past its expiry, like Redis' TTL margin: a clock that steps back behind the
    // expiry must still find the count, not an empty window.
    const expiresAtMs = setExpiryMs + this.lagMarginMs;
    if (expiresAtMs > this.currentExpiresAtMs) this.currentExpiresAtMs = expiresAtMs;
    if (expiresAtMs - nowMs <= this.rotationMs) return;
    const first = this.rotationMs === 0;
    this.rotationMs = expiresAtMs - nowMs;
    // The first generation starts with the first write; before it there was nothing to rotate.
    if (first) this.generationStartMs = Math.floor(nowMs / this.rotationMs) * this.rotationMs;
  }

  /** Keys held now, both generations; for tests and metrics. */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  async close(): Promise<void> {
    this.current.clear();
    this.previous.clear();
  }

  private rotate(nowMs: number): void {
    if (this.rotationMs === 0) return;
    const elapsedMs = nowMs - this.generationStartMs;
    if (elapsedMs < this.rotationMs) return;
    if (elapsedMs >= 2 * this.rotationMs) {
      this.previous = new Map();
    } else {
      this.previous = this.current;
    }
    this.current = new Map();
    // Aligned to multiples of rotationMs, so the two generations span at most the last two rotations;
    // but never earlier than one rotation before the latest expiry the generation just retired holds,
    // since it is dropped one rotation after this start. The grid alone kept that promise only while
    // rotationMs never grew: once a write lengthens it, the grid of the new length can start this
    // generation before writes of the old one, whose live counts were then dropped (a sliding-window
    // count forgotten 1.5 s before it expired, by test/integration/store-contract.test.ts).
    const alignedMs = Math.floor(nowMs / this.rotationMs) * this.rotationMs;
    this.generationStartMs = Math.max(alignedMs, this.currentExpiresAtMs - this.rotationMs);
    this.currentExpiresAtMs = Number.NEGATIVE_INFINITY;
  }
}

function readStates(slots: Slots | undefined, set: CompiledPolicySet): unknown[] {
  const states: unknown[] = [];
  // The slot names are built once per set (compiled-policy-set.ts): a freshly built string as a
  // property key costs V8 a string-table lookup on every access.
  for (let i = 0; i < set.size; i++) states.push(stateIn(slots, set.slots[i] as string, set.algorithms[i] as AnyAlgorithm));
  return states;
}

/** The state held in `slot` (null: empty), unpacked when its algorithm keeps a packed form. */
function stateIn(slots: Slots | undefined, slot: string, algorithm: AnyAlgorithm): unknown {
  const held = slots === undefined ? undefined : slots[slot];
  if (held === undefined || held === null) return null;
  if (isHeldWindow(held)) return { windowNumber: held.windowNumber, count: held.count };
  return algorithm.unpack === undefined ? held : algorithm.unpack(held);
}

/**
 * Whether a slot holds a HeldWindow. By its constructor, not instanceof: under tsx (whose class
 * renames itself in a static block) an instanceof in stateIn cost every consumeSync ~10 ns.
 */
function isHeldWindow(held: unknown): held is HeldWindow {
  return typeof held === 'object' && held !== null && held.constructor === HeldWindow;
}
