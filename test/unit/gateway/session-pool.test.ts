import fc from 'fast-check';
import { SessionPool, type PooledSession } from '../../../src/gateway/session-pool';

class FakeSession implements PooledSession {
  calls = 0;
  retired = 0;
  constructor(readonly key: string) {}
  busy(): boolean {
    return this.calls > 0;
  }
  retire(): void {
    this.retired += 1;
  }
}

function pool(maxSessions: number, idleMs: number) {
  const created: FakeSession[] = [];
  const sessions = new SessionPool<FakeSession>({
    maxSessions,
    idleMs,
    create: (key) => {
      const session = new FakeSession(key);
      created.push(session);
      return session;
    },
  });
  return { sessions, created };
}

describe('the pool of upstream sessions per caller', () => {
  it('creates a session on a caller’s first use and gives it back on the next', () => {
    const { sessions, created } = pool(4, 1000);
    const first = sessions.get('tok_a', 0);
    expect(sessions.get('tok_a', 10)).toBe(first);
    expect(sessions.get('tok_b', 20)).not.toBe(first);
    expect(created.map((s) => s.key)).toEqual(['tok_a', 'tok_b']);
  });

  it.each([
    { name: 'full: the least recently used idle session is retired', busy: [] as string[], retired: 'tok_b' },
    { name: 'full and the oldest busy: the oldest idle one goes instead', busy: ['tok_b'], retired: 'tok_c' },
    { name: 'full and every one busy: the least recently used goes (it closes once its calls end)', busy: ['tok_a', 'tok_b', 'tok_c'], retired: 'tok_b' },
  ])('$name', ({ busy, retired }) => {
    const { sessions, created } = pool(3, 60_000);
    sessions.get('tok_a', 0);
    sessions.get('tok_b', 1);
    sessions.get('tok_c', 2);
    sessions.get('tok_a', 3); // a used again: b is now the least recently used
    for (const session of created) if (busy.includes(session.key)) session.calls = 1;
    sessions.get('tok_d', 4);
    expect(sessions.size).toBe(3);
    expect(created.filter((s) => s.retired > 0).map((s) => s.key)).toEqual([retired]);
    expect(sessions.has(retired)).toBe(false);
  });

  it('retires a session unused for idleMs, unless a call still runs on it', () => {
    const { sessions, created } = pool(10, 1000);
    sessions.get('tok_a', 0);
    sessions.get('tok_b', 500);
    (created[1] as FakeSession).calls = 1;
    sessions.sweep(999);
    expect(sessions.size).toBe(2);
    sessions.sweep(1000);
    expect(sessions.has('tok_a')).toBe(false);
    sessions.sweep(5000);
    expect(sessions.has('tok_b')).toBe(true);
    (created[1] as FakeSession).calls = 0;
    sessions.sweep(5000);
    expect(sessions.size).toBe(0);
    expect(created.map((s) => s.retired)).toEqual([1, 1]);
  });

  it('removes only the session it is given, not a newer one under the same key', () => {
    const { sessions, created } = pool(10, 1000);
    const old = sessions.get('tok_a', 0);
    sessions.remove('tok_a', old);
    const fresh = sessions.get('tok_a', 1);
    sessions.remove('tok_a', old);
    expect(sessions.get('tok_a', 2)).toBe(fresh);
    expect(created.map((s) => s.retired)).toEqual([1, 0]);
  });

  it('refuses a size below 1 or a negative idle time, naming the option', () => {
    expect(() => pool(0, 1000)).toThrow(/maxSessions/);
    expect(() => pool(1, -1)).toThrow(/idleMs/);
  });

  it('property: never holds more than maxSessions, never keeps an idle session past idleMs after a use, retires each session at most once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.record({ key: fc.integer({ min: 0, max: 8 }), advanceMs: fc.integer({ min: 0, max: 80 }), busy: fc.boolean() }), { maxLength: 60 }),
        (maxSessions, idleMs, steps) => {
          const { sessions, created } = pool(maxSessions, idleMs);
          const lastUse = new Map<string, number>();
          let nowMs = 0;
          for (const step of steps) {
            nowMs += step.advanceMs;
            const key = `tok_${step.key}`;
            const session = sessions.get(key, nowMs);
            lastUse.set(key, nowMs);
            session.calls = step.busy ? 1 : 0;
            expect(sessions.size).toBeLessThanOrEqual(maxSessions);
            for (const [other, usedAt] of lastUse) {
              const held = created.filter((s) => s.key === other && s.retired === 0);
              if (nowMs - usedAt >= idleMs && held.every((s) => !s.busy()) && sessions.has(other)) {
                // Swept at the front only: an idle one may wait behind a busy older one, never behind an idle one.
                const older = [...lastUse].filter(([, t]) => t < usedAt).map(([k]) => k);
                expect(older.some((k) => sessions.has(k) && created.some((s) => s.key === k && s.busy()))).toBe(true);
              }
            }
          }
          expect(created.every((s) => s.retired <= 1)).toBe(true);
          expect(created.filter((s) => s.retired === 0).length).toBe(sessions.size);
        },
      ),
    );
  });
});
