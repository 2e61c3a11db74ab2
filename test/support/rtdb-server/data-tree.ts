import { createHash } from 'node:crypto';

/** A stored RTDB value: never arrays, never empty objects, never null children. */
export type Json = null | boolean | number | string | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export function splitPath(path: string): string[] {
  return path.split('/').filter((part) => part.length > 0);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * Brings client input to the shape RTDB stores. Priorities are dropped: the
 * firelimit code never uses them, and keeping them out means the server hash and
 * the client hash cannot disagree over them.
 */
export function normalize(value: unknown): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (!isObject(value)) return null;
  if ('.value' in value) return normalize(value['.value']);
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === '.priority') continue;
    const normalized = normalize(child);
    if (normalized !== null) out[key] = normalized;
  }
  return Object.keys(out).length > 0 ? out : null;
}

export function getAt(root: Json, parts: readonly string[]): Json {
  let node: Json = root;
  for (const part of parts) {
    if (!isObject(node)) return null;
    node = (node as JsonObject)[part] ?? null;
  }
  return node;
}

/** A mutable root; writes change it in place (cheaper than copying wide nodes per transaction). */
export class DataTree {
  root: Json = null;

  get(parts: readonly string[]): Json {
    return getAt(this.root, parts);
  }

  set(parts: readonly string[], value: Json): void {
    if (parts.length === 0) {
      this.root = value;
      return;
    }
    if (value === null) {
      this.remove(parts);
      return;
    }
    if (!isObject(this.root)) this.root = {};
    let node = this.root as JsonObject;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (!isObject(next)) node[part] = {};
      node = node[part] as JsonObject;
    }
    node[parts[parts.length - 1] as string] = value;
  }

  private remove(parts: readonly string[]): void {
    const chain: JsonObject[] = [];
    let node: Json = this.root;
    for (const part of parts.slice(0, -1)) {
      if (!isObject(node)) return;
      chain.push(node as JsonObject);
      node = (node as JsonObject)[part] ?? null;
    }
    if (!isObject(node)) return;
    chain.push(node as JsonObject);
    // Delete, then prune parents that became empty: RTDB has no empty nodes.
    for (let depth = parts.length - 1; depth >= 0; depth--) {
      const parent = chain[depth] as JsonObject;
      delete parent[parts[depth] as string];
      if (Object.keys(parent).length > 0) return;
    }
    this.root = null;
  }
}

/**
 * Replaces `{".sv": ...}` placeholders (timestamp, increment) the way RTDB does:
 * against the value stored at the same location before the write.
 */
export function resolveServerValues(value: unknown, existing: Json, now: number): unknown {
  if (!isObject(value)) return value;
  if ('.sv' in value) {
    const op = value['.sv'];
    if (op === 'timestamp') return now;
    if (isObject(op) && typeof op.increment === 'number') {
      return typeof existing === 'number' ? existing + op.increment : op.increment;
    }
    throw new Error(`unsupported server value ${JSON.stringify(op)}`);
  }
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    out[key] = resolveServerValues(child, getAt(existing, [key]), now);
  }
  return out;
}

const INTEGER_KEY = /^-?(0*)\d{1,10}$/;

function keyAsInt(key: string): number | null {
  if (!INTEGER_KEY.test(key)) return null;
  const n = Number(key);
  return n >= -2147483648 && n <= 2147483647 ? n : null;
}

/** The client's key order (nameCompare): 32-bit integer keys numerically first, then strings. */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  const ai = keyAsInt(a);
  const bi = keyAsInt(b);
  if (ai !== null && bi !== null) return ai - bi === 0 ? a.length - b.length : ai - bi;
  if (ai !== null) return -1;
  if (bi !== null) return 1;
  return a < b ? -1 : 1;
}

function sha1(text: string): string {
  return createHash('sha1').update(text, 'utf8').digest('base64');
}

function doubleHex(n: number): string {
  const buf = Buffer.alloc(8);
  buf.writeDoubleBE(n, 0);
  return buf.toString('hex');
}

/**
 * The transaction hash, byte for byte as @firebase/database computes it
 * (LeafNode.hash / ChildrenNode.hash). Children go in priority-index order,
 * which without priorities is compareKeys order — firebase-server sorted them
 * as text, so nodes with 10+ integer keys never matched.
 */
export function hashOf(value: Json): string {
  if (value === null) return '';
  if (!isObject(value)) {
    const body = typeof value === 'number' ? doubleHex(value) : String(value);
    return sha1(`${typeof value}:${body}`);
  }
  let text = '';
  for (const key of Object.keys(value).sort(compareKeys)) {
    const childHash = hashOf(value[key] ?? null);
    if (childHash !== '') text += `:${key}:${childHash}`;
  }
  return text === '' ? '' : sha1(text);
}
