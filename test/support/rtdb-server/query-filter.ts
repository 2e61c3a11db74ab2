import { compareKeys, getAt, isObject, splitPath, type Json, type JsonObject } from './data-tree';

/** The wire form of a query (queryParamsGetQueryObject in @firebase/database). */
export interface WireQuery {
  sp?: unknown;
  sn?: string;
  sin?: boolean;
  ep?: unknown;
  en?: string;
  ein?: boolean;
  l?: number;
  vf?: 'l' | 'r';
  i?: string;
}

export function isFilteringQuery(query: WireQuery | undefined): query is WireQuery {
  return (
    query !== undefined &&
    (query.sp !== undefined || query.ep !== undefined || query.l !== undefined || query.i !== undefined)
  );
}

function typeRank(value: unknown): number {
  if (value === null || value === undefined) return 0;
  if (value === false) return 1;
  if (value === true) return 2;
  if (typeof value === 'number') return 3;
  if (typeof value === 'string') return 4;
  return 5;
}

/** RTDB value order: null < false < true < numbers < strings < objects. */
function compareValues(a: unknown, b: unknown): number {
  const rank = typeRank(a) - typeRank(b);
  if (rank !== 0) return rank;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return 0;
}

interface Entry {
  key: string;
  sortValue: unknown;
}

/**
 * Applies orderBy/startAt/endAt/limit server-side. `get()` hands the server's
 * answer to the caller unfiltered, so a filtering query must be answered
 * filtered. Priorities are not stored, so orderByPriority is key order.
 */
export function applyQuery(value: Json, query: WireQuery | undefined): Json {
  if (!isFilteringQuery(query) || !isObject(value)) return value;
  const index = query.i ?? '.priority';
  const byKey = index === '.key';
  const sortValueOf = (key: string, child: Json): unknown => {
    if (byKey) return key;
    if (index === '.value') return child;
    if (index === '.priority') return null;
    return getAt(child, splitPath(index));
  };
  const compare = (a: Entry, b: Entry): number =>
    byKey
      ? compareKeys(a.key, b.key)
      : compareValues(a.sortValue, b.sortValue) || compareKeys(a.key, b.key);
  const bound = (boundValue: unknown, boundName: string | undefined, entry: Entry): number => {
    if (byKey) return compareKeys(entry.key, String(boundValue));
    const byValue = compareValues(entry.sortValue, boundValue);
    if (byValue !== 0 || boundName === undefined) return byValue;
    return compareKeys(entry.key, boundName);
  };

  let entries: Entry[] = Object.entries(value as JsonObject).map(([key, child]) => ({
    key,
    sortValue: sortValueOf(key, child),
  }));
  entries.sort(compare);
  if (query.sp !== undefined) {
    const inclusive = query.sin !== false;
    entries = entries.filter((entry) => {
      const c = bound(query.sp, query.sn, entry);
      return inclusive ? c >= 0 : c > 0;
    });
  }
  if (query.ep !== undefined) {
    const inclusive = query.ein !== false;
    entries = entries.filter((entry) => {
      const c = bound(query.ep, query.en, entry);
      return inclusive ? c <= 0 : c < 0;
    });
  }
  if (query.l !== undefined) {
    entries = query.vf === 'r' ? entries.slice(Math.max(0, entries.length - query.l)) : entries.slice(0, query.l);
  }
  const out: JsonObject = {};
  for (const entry of entries) out[entry.key] = (value as JsonObject)[entry.key] as Json;
  return entries.length > 0 ? out : null;
}
