import type { FixedWindowState } from '../algorithms/fixed-window';

/**
 * The stored shape of one key: `{ [windowNumber]: count }`. We only ever
 * write one child, but read defensively: a node left by an older version, an
 * operator's hand edit, or RTDB's array conversion of small integer keys
 * (`{ "0": 3, "1": 4 }` comes back as `[3, 4]`) must not break a decision.
 */
export type WindowNode = Record<string, number>;

const WINDOW_KEY = /^(0|[1-9]\d*)$/;

/** The newest well-formed window in a node, or null when there is none. Junk children are ignored. */
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

/**
 * The whole node for a state. Writing the whole node (not a child) is what
 * prunes: every older window disappears with the first write of a new one.
 */
export function windowNode(state: FixedWindowState | null): WindowNode | null {
  return state === null ? null : { [String(state.windowNumber)]: state.count };
}
