import { loadConfig } from '../../src/config/config';

const A = 'https://p-default-rtdb.firebaseio.com';
const B = 'https://p-two.firebaseio.com';

describe('FIREBASE_DATABASE_URLS', () => {
  test.each([
    ['several databases', { FIREBASE_DATABASE_URLS: `${A}, ${B}` }, [A, B]],
    ['FIREBASE_DATABASE_URL alone, as before', { FIREBASE_DATABASE_URL: A }, [A]],
    ['both, the single one listed first', { FIREBASE_DATABASE_URL: A, FIREBASE_DATABASE_URLS: `${A},${B}` }, [A, B]],
  ])('reads %s', (_, env, urls) => {
    const config = loadConfig({ RATE_LIMIT_BACKEND: 'rtdb', ...env });
    expect(config.firebase.databaseUrls).toEqual(urls);
    // The firebase app's default database is the first: the upstream quota lives there.
    expect(config.firebase.databaseUrl).toBe(urls[0]);
  });

  test.each([
    ['a database listed twice', { FIREBASE_DATABASE_URLS: `${A},${A}` }, /FIREBASE_DATABASE_URLS: a database is listed twice/],
    ['an entry that is not a URL', { FIREBASE_DATABASE_URLS: `${A},not-a-url` }, /FIREBASE_DATABASE_URLS: "not-a-url" is not an http\(s\) database URL/],
    ['an empty entry', { FIREBASE_DATABASE_URLS: `${A},,${B}` }, /FIREBASE_DATABASE_URLS: "" is not an http\(s\) database URL/],
    ['FIREBASE_DATABASE_URL set to another database', { FIREBASE_DATABASE_URL: B, FIREBASE_DATABASE_URLS: `${A},${B}` }, /FIREBASE_DATABASE_URLS: FIREBASE_DATABASE_URL is set too, and is not the first of FIREBASE_DATABASE_URLS\n {4}fix: unset FIREBASE_DATABASE_URL, or list it first/],
  ])('refuses %s at boot, naming the knob and the remedy', (_, env, message) => {
    expect(() => loadConfig({ RATE_LIMIT_BACKEND: 'rtdb', ...env })).toThrow(message);
  });

  test('rtdb with neither knob still names FIREBASE_DATABASE_URL', () => {
    expect(() => loadConfig({ RATE_LIMIT_BACKEND: 'rtdb' })).toThrow(/FIREBASE_DATABASE_URL: RATE_LIMIT_BACKEND is rtdb but no database URL is set/);
  });
});
