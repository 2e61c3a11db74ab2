import type { Json } from './data-tree';

/** The slice of targaryen 3's Database we use (the package ships no types). */
interface TargaryenResult {
  allowed: boolean;
  info: string;
}
interface TargaryenDatabase {
  as(auth: object): TargaryenDatabase;
  read(path: string, now?: number): TargaryenResult;
  write(path: string, value: unknown, priority: undefined, now: number): TargaryenResult;
  update(path: string, patch: object, now: number): TargaryenResult;
}
interface TargaryenModule {
  database(rules: object, data: unknown): TargaryenDatabase;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const targaryen = require('targaryen') as TargaryenModule;

export const OPEN_RULES = { rules: { '.read': true, '.write': true } };

/** Accepts a parsed database.rules.json (`{rules: {...}}`) or its inner object. */
export function wrapRules(rules: object | undefined): object {
  if (rules === undefined) return OPEN_RULES;
  return 'rules' in rules ? rules : { rules };
}

export interface RuleCheck {
  allowed: boolean;
  info: string;
}

/**
 * Evaluates rules for one non-admin request at a time. Each check starts from a
 * base database whose auth is null and is never reused with another auth:
 * targaryen's `as(null)` keeps the previous auth, which is how firebase-server
 * leaked one connection's user into the next.
 */
export class RulesEvaluator {
  private base: TargaryenDatabase | null = null;
  private baseVersion = -1;

  constructor(private readonly rules: object) {}

  private database(data: Json, version: number, auth: object | null): TargaryenDatabase {
    if (this.base === null || this.baseVersion !== version) {
      this.base = targaryen.database(this.rules, data);
      this.baseVersion = version;
    }
    return auth === null ? this.base : this.base.as(auth);
  }

  canRead(data: Json, version: number, auth: object | null, path: string): RuleCheck {
    return pick(this.database(data, version, auth).read(path, Date.now()));
  }

  canWrite(data: Json, version: number, auth: object | null, path: string, value: Json, now: number): RuleCheck {
    return pick(this.database(data, version, auth).write(path, value, undefined, now));
  }

  canUpdate(
    data: Json,
    version: number,
    auth: object | null,
    path: string,
    patch: Record<string, Json>,
    now: number,
  ): RuleCheck {
    return pick(this.database(data, version, auth).update(path, patch, now));
  }
}

function pick(result: TargaryenResult): RuleCheck {
  return { allowed: result.allowed, info: result.info };
}
