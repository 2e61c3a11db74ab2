import type { FixedWindowState } from '../../window/fixed-window';
import { setExpiresAtMs } from '../../window/decide-set';
import { algorithmOf, stateSlotOf, type PolicySet } from '../../window/policy';
import { isSingleFixedWindow, STATE_CODECS } from '../../support/state-codecs';

/**
 * The stored shape of one key: `{ [windowNumber]: count, e: expiresAtMs }`.
 * `e` is the epoch ms at which the window ends: after it the node counts
 * nothing and the sweeper may remove it (docs/adr/0008-expiring-shared-keys.md).
 * We only ever write one window, but read defensively: a node left by an older
 * version (no `e`), an operator's hand edit, or RTDB's array conversion of
 * small integer keys (`{ "0": 3, "1": 4 }` comes back as `[3, 4]`) must not
 * break a decision.
 */
export type WindowNode = Record<string, number>;

/** The child that holds a node's expiry. Not a window number, so readers of windows skip it. */
export const EXPIRY_CHILD = 'e';

const WINDOW_KEY = /^(0|[1-9]\d*)$/;

/** The newest well-formed window in a node, or null when there is none. Junk children (and `e`) are ignored. */
export function newestWindow(value: unknown): FixedWindowState | null {
  if (value === null || typeof value !== 'object') return null;
  let newest: FixedWindowState | null = null;
  for (const [key, count] of Object.entries(value as Record<string, unknown>)) {
    if (!WINDOW_KEY.test(key)) continue;
    const windowNumber = Number(key);
    if (!Number.isSafeInteger(windowNumber)) continue;
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) continue;
    if (newest === null || windowNumber > newest.windowNumber) newest = { windowNumber, count };
  }
  return newest;
}

/** A node's `e` when it is a finite number, else null (a node written before `e` existed, or junk). */
export function expiryOf(value: unknown): number | null {
  if (value === null || typeof value !== 'object') return null;
  const expiresAtMs = (value as Record<string, unknown>)[EXPIRY_CHILD];
  return typeof expiresAtMs === 'number' && Number.isFinite(expiresAtMs) ? expiresAtMs : null;
}

/**
 * The whole node for a state: its one window and the end of that window as
 * `e`. Writing the whole node (not a child) is what prunes: every older window
 * disappears with the first write of a new one.
 */
export function windowNode(state: FixedWindowState | null, windowMs: number): WindowNode | null {
  if (state === null) return null;
  return { [String(state.windowNumber)]: state.count, [EXPIRY_CHILD]: (state.windowNumber + 1) * windowMs };
}

/**
 * The states of a policy set in a key's node, per policy (null: empty).
 * One fixed-window policy reads the layout above; any other set reads
 * `{ [stateSlotOf(policy)]: compactState, e: expiresAtMs }`, each child the
 * algorithm's compact string (state-codecs.ts), so a node holds at most one
 * bounded string per policy of the set (a sliding log: at most `limit` entries).
 */
export function readSetStates(value: unknown, policies: PolicySet): unknown[] {
  if (isSingleFixedWindow(policies)) return [newestWindow(value)];
  const children = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  return policies.map((policy) => {
    const raw = children[stateSlotOf(policy)];
    return typeof raw === 'string' ? STATE_CODECS[algorithmOf(policy)].parse(raw) : null;
  });
}

/**
 * The whole node for a set's states; null when every state is empty (the
 * node goes). Written whole, so the children of policies no longer in the
 * set (a tier that changed) disappear with the first write.
 */
export function setNode(states: readonly unknown[], policies: PolicySet): Record<string, unknown> | null {
  if (isSingleFixedWindow(policies)) return windowNode((states[0] ?? null) as FixedWindowState | null, policies[0].windowMs);
  const expiresAtMs = setExpiresAtMs(states, policies);
  if (expiresAtMs === null) return null;
  const node: Record<string, unknown> = { [EXPIRY_CHILD]: expiresAtMs };
  policies.forEach((policy, i) => {
    const state = states[i] ?? null;
    if (state !== null) node[stateSlotOf(policy)] = STATE_CODECS[algorithmOf(policy)].format(state);
  });
  return node;
}
