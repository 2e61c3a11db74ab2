import { DataTree, isObject, splitPath, type Json } from './data-tree';
import { RulesEvaluator, wrapRules } from './rules';

/** Who a connection acts as: the admin bypasses rules, everyone else is checked. */
export interface Identity {
  admin: boolean;
  auth: object | null;
}

export const ADMIN: Identity = { admin: true, auth: null };
export const ANONYMOUS: Identity = { admin: false, auth: null };

/** A connection's side of change fan-out. */
export interface ChangeListener {
  notify(base: string[], changes: Map<string, Json>, merge: boolean): void;
}

/** One database (RTDB namespace): its data, its rules, its live connections. */
export class Namespace {
  readonly tree = new DataTree();
  /** Writes applied (puts, merges, REST writes): also the count a bench reads as the database's write load. */
  version = 0;
  /** Transaction writes refused because their hash was stale (the loser of a race re-runs). */
  staleWrites = 0;
  readonly connections = new Set<ChangeListener>();
  evaluator: RulesEvaluator;
  /** The loaded rules, whose `.indexOn` entries say which queries the server filters; null when none were loaded. */
  private indexRules: object | null;

  constructor(rules: object | undefined) {
    this.evaluator = new RulesEvaluator(wrapRules(rules));
    this.indexRules = rules === undefined ? null : wrapRules(rules);
  }

  setRules(rules: object): void {
    this.evaluator = new RulesEvaluator(wrapRules(rules));
    this.indexRules = wrapRules(rules);
  }

  /**
   * Whether the server can answer a query on `index` at `parts` itself. As on
   * RTDB, key and priority order need no index; a child or `.value` order
   * needs it listed in `.indexOn` at the query's location (a `$wildcard` rule
   * matches any segment). With no rules loaded, as for a fresh emulator
   * namespace with open rules, nothing is required.
   */
  indexed(parts: readonly string[], index: string | undefined): boolean {
    if (this.indexRules === null) return true;
    const wanted = index ?? '.priority';
    if (wanted === '.priority' || wanted === '.key') return true;
    let node: unknown = (this.indexRules as { rules?: unknown }).rules;
    for (const part of parts) {
      if (!isObject(node)) return false;
      const wildcard = Object.keys(node).find((key) => key.startsWith('$'));
      node = part in node ? node[part] : wildcard === undefined ? undefined : node[wildcard];
    }
    const indexOn = isObject(node) ? node['.indexOn'] : undefined;
    const listed = typeof indexOn === 'string' ? [indexOn] : Array.isArray(indexOn) ? indexOn : [];
    return listed.includes(wanted);
  }

  check(who: Identity, op: 'read' | 'write' | 'update', rawPath: string, value?: unknown, now = Date.now()) {
    if (who.admin) return { allowed: true, info: '' };
    const { tree, version, evaluator } = this;
    const path = `/${splitPath(rawPath).join('/')}`;
    if (op === 'read') return evaluator.canRead(tree.root, version, who.auth, path);
    if (op === 'write') return evaluator.canWrite(tree.root, version, who.auth, path, value as Json, now);
    return evaluator.canUpdate(tree.root, version, who.auth, path, value as Record<string, Json>, now);
  }

  /** Applies writes at `base`+each key, then tells every listening connection once. */
  apply(base: string[], changes: Map<string, Json>, merge: boolean): void {
    for (const [rel, value] of changes) this.tree.set([...base, ...splitPath(rel)], value);
    this.version++;
    for (const connection of this.connections) connection.notify(base, changes, merge);
  }
}
