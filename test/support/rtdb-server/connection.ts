import { randomUUID } from 'node:crypto';
import { hashOf, normalize, resolveServerValues, splitPath, type Json } from './data-tree';
import { ADMIN, ANONYMOUS, type ChangeListener, type Identity, type Namespace } from './namespace';
import { applyQuery, isFilteringQuery, type WireQuery } from './query-filter';

/** The slice of a ws 7 socket we use (no @types/ws in this tree). */
export interface WsSocket {
  send(data: string): void;
  close(): void;
  on(event: 'message', cb: (data: unknown) => void): void;
  on(event: 'close', cb: () => void): void;
}

// The client splits at 16384; replies use the same size so any client can reassemble them.
const MAX_FRAME = 16384;

interface Listen {
  parts: string[];
  tag?: number;
  query?: WireQuery;
}

function isPrefix(a: readonly string[], b: readonly string[]): boolean {
  return a.length <= b.length && a.every((part, i) => part === b[i]);
}

type Body = Record<string, unknown>;

/** One client websocket speaking RTDB protocol v5. */
export class Connection implements ChangeListener {
  private identity: Identity = ANONYMOUS;
  private readonly listens = new Map<string, Listen>();
  private readonly onDisconnect: Array<{ action: string; path: string; data: unknown }> = [];
  private pendingFrames = 0;
  private buffer = '';

  constructor(
    private readonly socket: WsSocket,
    private readonly ns: Namespace,
    host: string,
  ) {
    ns.connections.add(this);
    socket.on('message', (data) => this.onFrame(String(data)));
    socket.on('close', () => this.onClose());
    this.send({ t: 'c', d: { t: 'h', d: { ts: Date.now(), v: '5', h: host, s: randomUUID() } } });
  }

  private send(message: unknown): void {
    const text = JSON.stringify(message);
    try {
      if (text.length <= MAX_FRAME) {
        this.socket.send(text);
        return;
      }
      this.socket.send(String(Math.ceil(text.length / MAX_FRAME)));
      for (let i = 0; i < text.length; i += MAX_FRAME) this.socket.send(text.slice(i, i + MAX_FRAME));
    } catch {
      // The socket is closing; the client resynchronises on reconnect.
    }
  }

  private reply(r: unknown, status: string, data: unknown = {}): void {
    if (typeof r === 'number') this.send({ t: 'd', d: { r, b: { s: status, d: data } } });
  }

  private onFrame(frame: string): void {
    if (this.pendingFrames === 0 && frame.length <= 6 && !Number.isNaN(Number(frame))) {
      this.pendingFrames = Number(frame); // '0' is the client's keepalive
      this.buffer = '';
      return;
    }
    this.buffer += frame;
    if (this.pendingFrames > 1) {
      this.pendingFrames--;
      return;
    }
    this.pendingFrames = 0;
    const text = this.buffer;
    this.buffer = '';
    let message: { t?: string; d?: { r?: number; a?: string; b?: Body; t?: string } };
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (message.t === 'c' && message.d?.t === 'p') this.send({ t: 'c', d: { t: 'o', d: {} } });
    if (message.t !== 'd' || !message.d) return;
    try {
      this.handle(message.d.r, message.d.a ?? '', message.d.b ?? {});
    } catch (error) {
      this.reply(message.d.r, 'error', String(error));
    }
  }

  private handle(r: number | undefined, action: string, body: Body): void {
    const path = typeof body.p === 'string' ? body.p : '';
    switch (action) {
      case 'q':
      case 'l':
        return this.listen(r, path, body);
      case 'n':
        this.listens.delete(listenKey(path, body.t));
        return this.reply(r, 'ok');
      case 'g':
        return this.get(r, path, body.q as WireQuery | undefined);
      case 'p':
        return this.put(r, path, body.d, body.h);
      case 'm':
        return this.merge(r, path, body.d);
      case 'auth':
      case 'gauth':
        return this.auth(r, body);
      case 'unauth':
        this.identity = ANONYMOUS;
        return this.reply(r, 'ok');
      case 'o':
      case 'om':
        this.onDisconnect.push({ action: action === 'o' ? 'p' : 'm', path, data: body.d });
        return this.reply(r, 'ok');
      case 'oc': {
        const parts = splitPath(path);
        const kept = this.onDisconnect.filter((op) => !isPrefix(parts, splitPath(op.path)));
        this.onDisconnect.splice(0, this.onDisconnect.length, ...kept);
        return this.reply(r, 'ok');
      }
      default: // 's' (stats), 'appcheck', 'unappeck': nothing to do
        return this.reply(r, 'ok');
    }
  }

  private auth(r: number | undefined, body: Body): void {
    const cred = typeof body.cred === 'string' ? body.cred : '';
    let identity: Identity | null = null;
    if (cred === 'owner') {
      // firebase-admin in emulator mode: admin, unless databaseAuthVariableOverride
      // arrives as `noauth` (null) or `authvar` (a user) — then rules apply.
      if (body.noauth === true) identity = ANONYMOUS;
      else if (body.authvar && typeof body.authvar === 'object') identity = { admin: false, auth: body.authvar };
      else identity = ADMIN;
    } else {
      const claims = decodeJwt(cred);
      if (claims) identity = { admin: false, auth: { ...claims, uid: claims.user_id ?? claims.sub, token: claims } };
    }
    if (!identity) return this.reply(r, 'invalid_token', 'Could not parse auth token.');
    this.identity = identity;
    this.reply(r, 'ok', { auth: identity.auth, expires: Math.floor(Date.now() / 1000) + 3600 });
  }

  private listen(r: number | undefined, path: string, body: Body): void {
    if (!this.ns.check(this.identity, 'read', path).allowed) return this.reply(r, 'permission_denied', 'Permission denied');
    const listen: Listen = { parts: splitPath(path) };
    if (typeof body.t === 'number') {
      listen.tag = body.t;
      listen.query = body.q as WireQuery;
    }
    this.listens.set(listenKey(path, body.t), listen);
    this.pushListen(listen);
    // RTDB's listen reply carries the warning the SDK turns into "Using an unspecified index".
    this.reply(r, 'ok', this.unindexed(listen.parts, listen.query) ? { w: ['no_index'] } : {});
  }

  /** A filtering query whose order has no `.indexOn`: RTDB sends the whole location and leaves filtering to the client. */
  private unindexed(parts: readonly string[], query: WireQuery | undefined): boolean {
    return isFilteringQuery(query) && !this.ns.indexed(parts, query.i);
  }

  /** What the server sends for a path and an optional query: filtered here only when it can be (see unindexed). */
  private answer(parts: readonly string[], query: WireQuery | undefined): Json {
    const value = this.ns.tree.get(parts);
    return this.unindexed(parts, query) ? value : applyQuery(value, query);
  }

  private get(r: number | undefined, path: string, query: WireQuery | undefined): void {
    if (!this.ns.check(this.identity, 'read', path).allowed) return this.reply(r, 'permission_denied', 'Permission denied');
    // An unindexed get() is answered like an unindexed listen: the whole location. firebase's get()
    // hands the payload to the caller as it came, so this is the worst case a caller must survive.
    this.reply(r, 'ok', this.answer(splitPath(path), query));
  }

  private put(r: number | undefined, path: string, data: unknown, hash: unknown, who = this.identity): void {
    const parts = splitPath(path);
    if (parts[parts.length - 1] === '.priority') return this.reply(r, 'ok'); // priorities are not stored
    const existing = this.ns.tree.get(parts);
    if (typeof hash === 'string' && hash !== hashOf(existing)) {
      this.ns.staleWrites++;
      return this.reply(r, 'datastale', 'Transaction hash does not match');
    }
    const now = Date.now();
    const value = normalize(resolveServerValues(data, existing, now));
    if (!this.ns.check(who, 'write', path, value, now).allowed) return this.reply(r, 'permission_denied', 'Permission denied');
    this.ns.apply(parts, new Map([['', value]]), false);
    this.reply(r, 'ok');
  }

  private merge(r: number | undefined, path: string, data: unknown, who = this.identity): void {
    const parts = splitPath(path);
    const now = Date.now();
    const changes = new Map<string, Json>();
    for (const [rel, child] of Object.entries((data ?? {}) as Body)) {
      const existing = this.ns.tree.get([...parts, ...splitPath(rel)]);
      changes.set(rel, normalize(resolveServerValues(child, existing, now)));
    }
    if (!this.ns.check(who, 'update', path, Object.fromEntries(changes), now).allowed) {
      return this.reply(r, 'permission_denied', 'Permission denied');
    }
    this.ns.apply(parts, changes, true);
    this.reply(r, 'ok');
  }

  private pushListen(listen: Listen): void {
    const value = this.ns.tree.get(listen.parts);
    const p = listen.parts.join('/');
    if (listen.tag === undefined) this.send({ t: 'd', d: { a: 'd', b: { p, d: value } } });
    else this.send({ t: 'd', d: { a: 'd', b: { p, d: this.answer(listen.parts, listen.query), t: listen.tag } } });
  }

  /** Sends the changed data to this connection's listens, once per covering listen. */
  notify(base: string[], changes: Map<string, Json>, merge: boolean): void {
    const untagged = [...this.listens.values()].filter((l) => l.tag === undefined);
    if (untagged.some((l) => isPrefix(l.parts, base))) {
      const p = base.join('/');
      if (!merge) this.send({ t: 'd', d: { a: 'd', b: { p, d: this.ns.tree.get(base) } } });
      else {
        const d: Record<string, Json> = {};
        for (const rel of changes.keys()) d[rel] = this.ns.tree.get([...base, ...splitPath(rel)]);
        this.send({ t: 'd', d: { a: 'm', b: { p, d } } });
      }
    } else {
      for (const l of untagged) if (isPrefix(base, l.parts)) this.pushListen(l);
    }
    for (const l of this.listens.values()) {
      if (l.tag !== undefined && (isPrefix(l.parts, base) || isPrefix(base, l.parts))) this.pushListen(l);
    }
  }

  private onClose(): void {
    this.ns.connections.delete(this);
    this.listens.clear();
    // onDisconnect writes run with the identity that queued them, as on RTDB.
    for (const op of this.onDisconnect) {
      if (op.action === 'p') this.put(undefined, op.path, op.data, undefined);
      else this.merge(undefined, op.path, op.data);
    }
  }
}

function listenKey(path: string, tag: unknown): string {
  return typeof tag === 'number' ? `tag:${tag}` : `path:${splitPath(path).join('/')}`;
}

function decodeJwt(token: string): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return null;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return claims && typeof claims === 'object' ? (claims as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
