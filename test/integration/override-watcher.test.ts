import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { FileOverrideStore, MAX_OVERRIDES_FILE_BYTES } from '../../src/tokens/file-override-store';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { FirestoreOverrideStore } from '../../src/tokens/firestore-override-store';
import { TokenService } from '../../src/tokens/token-service';
import type { LimitOverrideRecord } from '../../src/tokens/limit-override-record';
import { OverrideWatcher } from '../../src/tokens/override-watcher';
import { createCapturingLogger } from '../support/capturing-logger';
import { createFirestoreTestApp, startFirestoreTestServer, uniqueCollection, type FirestoreTestApp, type FirestoreTestServer } from '../support/firestore-server';

/**
 * The watcher against real files: what an operator's hand, an older CLI or a
 * crash can leave in limit-overrides.json never stops an instance, and an
 * instance never serves without the overrides it says it keeps.
 */
const NOW_MS = 1_700_000_000_000;
const POLL_MS = 100;
// Mid-minute and still, so the nine calls share one window.
const FROZEN_MS = Date.UTC(2026, 11, 1, 12, 0, 30);
let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-override-watcher-'));
  file = path.join(dir, 'limit-overrides.json');
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const record = (tokenId: string, limit: number, expiresAtMs: number | null = null): LimitOverrideRecord => ({
  id: `token=${tokenId}`,
  target: { tokenId },
  algorithm: 'fixed-window',
  limit,
  windowMs: 60_000,
  shadow: false,
  setAtMs: NOW_MS,
  expiresAtMs,
});
const writeOverrides = (overrides: unknown[]) => writeFile(file, JSON.stringify({ version: 1, overrides }, null, 2));

function watcherOf(logger = createCapturingLogger()) {
  return { logger, watcher: new OverrideWatcher({ store: new FileOverrideStore(file), pollMs: POLL_MS, logger, clock: () => NOW_MS }) };
}
const limitsIn = (watcher: OverrideWatcher) => [...watcher.current()].map(([id, o]) => [id, o.policies[0].limit]);
const events = (logger: ReturnType<typeof createCapturingLogger>, event: string) => logger.entries.filter((e) => e.fields.event === event);

describe('a record the service cannot load is skipped, logged once, and the others apply', () => {
  // What `limits set --expires 99999999d` wrote: every instance died at its next poll, every restart with a RangeError.
  const pastDateRange = record('tok_farfuture', 5, NOW_MS + 99_999_999 * 86_400_000);

  test('at startup: an expiry past the range of a Date', async () => {
    await writeOverrides([pastDateRange, record('tok_good', 7)]);
    const { logger, watcher } = watcherOf();
    await watcher.start();
    try {
      expect(limitsIn(watcher)).toEqual([['token=tok_good', 7]]);
      await watcher.refresh();
      await watcher.refresh();
      const skipped = events(logger, 'ratelimit.override_skipped');
      expect(skipped).toHaveLength(1);
      expect(skipped[0]?.fields).toMatchObject({ where: `${file} overrides[0]`, problem: expect.stringContaining('expiresAtMs') });
      expect(skipped[0]?.severity).toBe('ERROR');
    } finally {
      await watcher.close();
    }
  });

  test('while running: a poll that finds one keeps serving the others, and logs it again only if it comes back', async () => {
    await writeOverrides([record('tok_good', 7)]);
    const { logger, watcher } = watcherOf();
    await watcher.start();
    try {
      await writeOverrides([pastDateRange, record('tok_good', 8), { id: 'token=tok_typo', target: { tokenId: 'tok_typo' }, limit: 'ten' }]);
      await expect(watcher.refresh()).resolves.toBeUndefined();
      expect(limitsIn(watcher)).toEqual([['token=tok_good', 8]]);
      expect(events(logger, 'ratelimit.override_skipped').map((e) => e.fields.where)).toEqual([`${file} overrides[0]`, `${file} overrides[2]`]);
      await watcher.refresh();
      expect(events(logger, 'ratelimit.override_skipped')).toHaveLength(2);
      await writeOverrides([record('tok_good', 8)]);
      await watcher.refresh();
      await writeOverrides([pastDateRange, record('tok_good', 8)]);
      await watcher.refresh();
      expect(events(logger, 'ratelimit.override_skipped')).toHaveLength(3);
    } finally {
      await watcher.close();
    }
  });
});

describe('at startup, an unreadable overrides file keeps the instance from serving until it can be read', () => {
  test.each([
    ['half-written', '{ "version": 1, "overrides": [ { "id": "token=tok_good", "target": { "tokenId": "tok_g'],
    ['not JSON at all', 'overrides: tok_good=7'],
    ['a key given twice', '{ "version": 1, "overrides": [], "overrides": [] }'],
  ])('%s: start() waits, says so once (never "keeping the last ones read"), and applies the file once it is fixed', async (_name, text) => {
    await writeFile(file, text);
    const { logger, watcher } = watcherOf();
    let started = false;
    const starting = watcher.start().then(() => {
      started = true;
    });
    try {
      // Several retries' worth: it must still be waiting, with nothing in force.
      await new Promise((resolve) => setTimeout(resolve, POLL_MS * 4));
      expect(started).toBe(false);
      const unreadable = events(logger, 'ratelimit.overrides_unreadable_at_start');
      expect(unreadable).toHaveLength(1);
      expect(unreadable[0]?.message).toBe('limit overrides cannot be read at startup; not serving until they can be, retrying');
      expect(unreadable[0]?.fields.problem).toContain(`${file} is not valid JSON: line 1, column`);
      expect(logger.entries.map((e) => e.message).join('\n')).not.toContain('keeping the last ones read');

      await writeOverrides([record('tok_good', 7)]);
      await starting;
      expect(limitsIn(watcher)).toEqual([['token=tok_good', 7]]);
      expect(events(logger, 'ratelimit.overrides_readable')).toHaveLength(1);
    } finally {
      await watcher.close();
      await starting;
    }
  });

  test('a watcher closed while it waits stops waiting', async () => {
    await writeFile(file, '{');
    const { watcher } = watcherOf();
    const starting = watcher.start();
    await watcher.close();
    await expect(starting).resolves.toBeUndefined();
  });

  test('once running, an unreadable file keeps the last overrides read, as the log says', async () => {
    await writeOverrides([record('tok_good', 7)]);
    const { logger, watcher } = watcherOf();
    await watcher.start();
    try {
      await writeFile(file, '{ "version": 1, "overrides": [');
      await watcher.refresh();
      expect(limitsIn(watcher)).toEqual([['token=tok_good', 7]]);
      expect(events(logger, 'ratelimit.overrides_unreadable')[0]?.message).toBe('limit overrides cannot be read; keeping the last ones read');
    } finally {
      await watcher.close();
    }
  });
});

describe('the overrides file is bounded, and an unchanged one is not parsed again', () => {
  test(`a file over ${MAX_OVERRIDES_FILE_BYTES} bytes is refused with its size, the bound and the remedy`, async () => {
    await writeFile(file, `{ "version": 1, "overrides": [] }${' '.repeat(MAX_OVERRIDES_FILE_BYTES)}`);
    await expect(new FileOverrideStore(file).list(NOW_MS)).rejects.toThrow(
      `${file}: ${MAX_OVERRIDES_FILE_BYTES + 33} bytes, more than the ${MAX_OVERRIDES_FILE_BYTES} bytes read (about 15,000 overrides); remove overrides (npm run limits -- unset) or give them to tiers and rules in LIMITS_FILE`,
    );
  });

  test('a poll of an unchanged file returns the records of the last parse; a rewritten file is read again', async () => {
    await writeOverrides([record('tok_good', 7)]);
    const store = new FileOverrideStore(file);
    const first = await store.list(NOW_MS);
    const second = await store.list(NOW_MS);
    expect(second.records[0]).toBe(first.records[0]);
    await writeOverrides([record('tok_good', 7)]);
    const third = await store.list(NOW_MS);
    expect(third.records[0]).not.toBe(first.records[0]);
    expect(third.records[0]).toEqual(first.records[0]);
  });
});

describe('a new instance whose overrides file is half-written at boot', () => {
  test('is not built (so does not listen) until the file can be read, then holds the token to its override: 7, not the tier\'s 9', async () => {
    const tokensFile = path.join(dir, 'tokens.json');
    const store = new FileTokenStore({ path: tokensFile });
    const { secret, token } = await new TokenService({ store, tiers: ['default'] }).create({ name: 'overridden' });
    await store.close();
    const overridden = record(token.id, 7);
    const half = JSON.stringify({ version: 1, overrides: [overridden] }).slice(0, 60);
    await writeFile(file, half);
    const logger = createCapturingLogger();
    let service: Service | undefined;
    const building = buildService(loadConfig({ TOKENS_FILE: tokensFile, RATE_LIMIT_PER_MINUTE: '9', LIMIT_OVERRIDES_POLL_MS: String(POLL_MS) }), { logger, clock: () => FROZEN_MS }).then((built) => {
      service = built;
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS * 5));
      expect(service).toBeUndefined();
      await writeOverrides([overridden]);
      await building;
      const post = () =>
        request((service as Service).app)
          .post('/mcp')
          .set('Authorization', `Bearer ${secret}`)
          .set('Accept', 'application/json, text/event-stream')
          .set('Content-Type', 'application/json')
          .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
      const statuses: number[] = [];
      for (let i = 0; i < 9; i += 1) statuses.push((await post()).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 429, 429]);
    } finally {
      await building.catch(() => undefined);
      await service?.release();
    }
  });
});

describe('on Firestore, a document the service cannot load is skipped, and the others apply', () => {
  let server: FirestoreTestServer;
  let client: FirestoreTestApp;
  beforeAll(async () => {
    server = await startFirestoreTestServer();
    client = createFirestoreTestApp();
  });
  afterAll(async () => {
    await client?.close();
    await server?.close();
  });

  test('a record field that is not JSON, and an expiry past the range of a Date', async () => {
    const collection = uniqueCollection('limitOverrides');
    const store = new FirestoreOverrideStore(client.firestore, collection);
    await store.put(record('tok_good', 7));
    await client.firestore.collection(collection).doc('token%3Dtok_typo').set({ record: '{ "id": "token=tok_typo", ', expiresAtMs: null });
    const far = record('tok_far', 5, NOW_MS + 99_999_999 * 86_400_000);
    await client.firestore.collection(collection).doc(encodeURIComponent(far.id)).set({ record: JSON.stringify(far), expiresAtMs: far.expiresAtMs });
    const logger = createCapturingLogger();
    const watcher = new OverrideWatcher({ store, pollMs: POLL_MS, logger, clock: () => NOW_MS });
    await watcher.start();
    try {
      expect(limitsIn(watcher)).toEqual([['token=tok_good', 7]]);
      expect(events(logger, 'ratelimit.override_skipped').map((e) => [e.fields.where, e.fields.problem]).sort()).toEqual([
        [`${collection}/token%3Dtok_far`, expect.stringContaining('expiresAtMs')],
        [`${collection}/token%3Dtok_typo`, 'the "record" field is not JSON; delete the document or set the override again (npm run limits -- set)'],
      ]);
      expect(await store.remove('token=tok_typo', NOW_MS)).toBe(true);
    } finally {
      await watcher.close();
    }
  });
});

describe('an instance whose poll timer stalled (Cloud Run without CPU between requests)', () => {
  // Long enough that the real timer never fires during the test: only requests can start a read.
  const STALLED_POLL_MS = 600_000;

  function stalledWatcher() {
    const clock = { nowMs: NOW_MS };
    const store = new FileOverrideStore(file);
    let reads = 0;
    const counting = { list: (nowMs: number) => (reads++, store.list(nowMs)), close: () => store.close() } as unknown as FileOverrideStore;
    const watcher = new OverrideWatcher({ store: counting, pollMs: STALLED_POLL_MS, logger: createCapturingLogger(), clock: () => clock.nowMs });
    return { clock, watcher, reads: () => reads };
  }

  test('a request that finds the last read older than the interval starts one, and the next request sees the override', async () => {
    await writeOverrides([record('tok_a', 7)]);
    const { clock, watcher, reads } = stalledWatcher();
    await watcher.start();
    try {
      expect(limitsIn(watcher)).toEqual([['token=tok_a', 7]]);
      await writeOverrides([record('tok_a', 3)]);
      clock.nowMs += STALLED_POLL_MS + 1;
      // This request is answered from the view it found: the read runs beside it, not before it.
      expect(limitsIn(watcher)).toEqual([['token=tok_a', 7]]);
      expect(reads()).toBe(2);
      // Joins the read that request started (refresh() shares the one in progress).
      await watcher.refresh();
      expect(reads()).toBe(2);
      expect(limitsIn(watcher)).toEqual([['token=tok_a', 3]]);
    } finally {
      await watcher.close();
    }
  });

  test('requests within the interval start no read, and a burst of stale requests starts one', async () => {
    await writeOverrides([record('tok_a', 7)]);
    const { clock, watcher, reads } = stalledWatcher();
    await watcher.start();
    try {
      clock.nowMs += STALLED_POLL_MS - 1;
      for (let i = 0; i < 50; i++) watcher.current();
      expect(reads()).toBe(1);
      clock.nowMs += 1;
      for (let i = 0; i < 50; i++) watcher.current();
      expect(reads()).toBe(2);
      await watcher.refresh();
      expect(reads()).toBe(2);
    } finally {
      await watcher.close();
    }
  });
});
