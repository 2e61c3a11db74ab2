/**
 * JSON as an operator's file should be read: what JSON.parse accepts, except
 * that a key given twice in one object is refused (JSON.parse keeps the last,
 * so a tier defined twice silently took the second figure), nesting and size
 * are bounded (a 5,000-deep file overflowed the stack with a bare
 * RangeError), and a leading byte order mark is accepted (editors on Windows
 * write one; JSON.parse calls it an invisible "Unexpected token"). Every
 * refusal names the line, the column and the path of the field.
 *
 * Keys are own properties, `__proto__` included, so a schema that runs on the
 * value sees exactly what the file says.
 */

/** Limits of one read; the defaults suit a hand-written configuration file. */
export interface StrictJsonOptions {
  /** Objects and arrays inside one another, at most. Default 64. */
  readonly maxDepth?: number;
  /** UTF-8 bytes of the whole text, at most. Default 1 MiB. */
  readonly maxBytes?: number;
  /** Refuse a number with an exponent (`1e3`), as the number knobs refuse it: an operator's figure is written in digits. Default false. */
  readonly plainNumbers?: boolean;
}

export const STRICT_JSON_DEFAULT_MAX_DEPTH = 64;
export const STRICT_JSON_DEFAULT_MAX_BYTES = 1_048_576;

export type StrictJsonResult =
  | { readonly ok: true; readonly value: unknown }
  | {
      readonly ok: false;
      /** What is wrong and where, e.g. `line 3, column 7 (tiers.pro): "limits" is given twice ...`. */
      readonly problem: string;
      /** 1-based; absent for a refusal of the whole text (its size). */
      readonly line?: number;
      readonly column?: number;
    };

const BOM = '\uFEFF';
const CUT_SHORT = 'the text ends before the JSON does (is the file cut short?)';
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

class Refusal {
  constructor(
    readonly at: number,
    readonly message: string,
    readonly path: readonly (string | number)[],
  ) {}
}

/** The value of `text`, or the first problem in it. Never throws. */
export function parseStrictJson(text: string, options: StrictJsonOptions = {}): StrictJsonResult {
  const maxDepth = options.maxDepth ?? STRICT_JSON_DEFAULT_MAX_DEPTH;
  const maxBytes = options.maxBytes ?? STRICT_JSON_DEFAULT_MAX_BYTES;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) return { ok: false, problem: `${bytes} bytes, more than the ${maxBytes} bytes accepted` };
  const reader = new Reader(text.startsWith(BOM) ? text.slice(1) : text, maxDepth, options.plainNumbers === true);
  try {
    const value = reader.document();
    return { ok: true, value };
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    const { line, column } = lineAndColumn(reader.text, error.at);
    const where = error.path.length === 0 ? '' : ` (${formatPath(error.path)})`;
    return { ok: false, problem: `line ${line}, column ${column}${where}: ${error.message}`, line, column };
  }
}

/** `tiers.pro.limits[0]`, the way the configuration errors name a field. */
export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(the whole file)';
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('');
}

function lineAndColumn(text: string, at: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < at; i = text.indexOf('\n', i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return { line, column: at - lineStart + 1 };
}

class Reader {
  private i = 0;
  private readonly path: (string | number)[] = [];

  constructor(
    readonly text: string,
    private readonly maxDepth: number,
    private readonly plainNumbers: boolean,
  ) {}

  document(): unknown {
    const value = this.value(0);
    this.space();
    if (this.i < this.text.length) this.refuse(`unexpected ${this.shown()} after the end of the JSON value`);
    return value;
  }

  private value(depth: number): unknown {
    this.space();
    const c = this.text[this.i];
    if (c === '{' || c === '[') {
      if (depth >= this.maxDepth) this.refuse(`nested more than ${this.maxDepth} levels deep; the most accepted is ${this.maxDepth}`);
      return c === '{' ? this.object(depth + 1) : this.array(depth + 1);
    }
    if (c === '"') return this.string();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number();
    for (const [word, value] of LITERALS) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return value;
      }
    }
    return this.refuse(c === undefined ? CUT_SHORT : `unexpected ${this.shown()} where a value was expected`);
  }

  private object(depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.i += 1;
    this.space();
    if (this.text[this.i] === '}') {
      this.i += 1;
      return out;
    }
    for (;;) {
      this.space();
      if (this.text[this.i] !== '"') this.refuse(this.atEnd() ? CUT_SHORT : `expected a key in double quotes, found ${this.shown()}`);
      const keyAt = this.i;
      const key = this.string();
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        this.i = keyAt;
        this.refuse(`${JSON.stringify(key)} is given twice in one object; JSON would keep only the last, so keep one`);
      }
      this.space();
      if (this.text[this.i] !== ':') this.refuse(this.atEnd() ? CUT_SHORT : `expected ":" after the key ${JSON.stringify(key)}, found ${this.shown()}`);
      this.i += 1;
      this.path.push(key);
      const value = this.value(depth);
      // An own property even for "__proto__", as JSON.parse makes it: the schema then sees (and can refuse) it.
      if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      else out[key] = value;
      this.space();
      const c = this.text[this.i];
      if (c !== ',' && c !== '}') this.refuse(this.atEnd() ? CUT_SHORT : `expected "," or "}" after a value, found ${this.shown()}`);
      this.path.pop();
      this.i += 1;
      if (c === '}') return out;
    }
  }

  private array(depth: number): unknown[] {
    const out: unknown[] = [];
    this.i += 1;
    this.space();
    if (this.text[this.i] === ']') {
      this.i += 1;
      return out;
    }
    for (;;) {
      this.path.push(out.length);
      out.push(this.value(depth));
      this.space();
      const c = this.text[this.i];
      if (c !== ',' && c !== ']') this.refuse(this.atEnd() ? CUT_SHORT : `expected "," or "]" after a value, found ${this.shown()}`);
      this.path.pop();
      this.i += 1;
      if (c === ']') return out;
    }
  }

  /** Scanned by hand: a sticky regular expression per string was most of the time on a 2 MB file. */
  private string(): string {
    const start = this.i;
    let escaped = false;
    for (let j = start + 1; j < this.text.length; j += 1) {
      const c = this.text.charCodeAt(j);
      if (c === 0x22) {
        this.i = j + 1;
        if (!escaped) return this.text.slice(start + 1, j);
        try {
          return JSON.parse(this.text.slice(start, j + 1)) as string;
        } catch {
          this.i = start;
          return this.refuse('a string with a bad escape');
        }
      }
      if (c === 0x5c) {
        escaped = true;
        j += 1;
      } else if (c < 0x20) {
        this.i = j;
        this.refuse('a raw control character (a line break?) inside a string; write it as an escape such as \\n');
      }
    }
    return this.refuse(CUT_SHORT);
  }

  private number(): number {
    NUMBER.lastIndex = this.i;
    const match = NUMBER.exec(this.text);
    if (match === null) this.refuse(`unexpected ${this.shown()} where a number was expected`);
    if (this.plainNumbers && /[eE]/.test(match[0])) this.refuse(`${match[0]} is written with an exponent; write the number in decimal digits`);
    this.i += match[0].length;
    return Number(match[0]);
  }

  private space(): void {
    for (let c = this.text.charCodeAt(this.i); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = this.text.charCodeAt(this.i)) this.i += 1;
  }

  private atEnd(): boolean {
    return this.i >= this.text.length;
  }

  /** The character at the cursor, quoted, or "the end of the text". */
  private shown(): string {
    const c = this.text[this.i];
    return c === undefined ? 'the end of the text' : JSON.stringify(c);
  }

  private refuse(message: string): never {
    throw new Refusal(this.i, message, [...this.path]);
  }
}

const LITERALS: readonly (readonly [string, unknown])[] = [
  ['true', true],
  ['false', false],
  ['null', null],
];
