import { checkHost, checkOrigin, hostRuleFor, LOCALHOST_NAMES } from '../../src/http/host-validation';

const listed = hostRuleFor(['mcp.example.com', 'localhost:8080'], false);

describe('checkHost', () => {
  test('an allowed hostname passes on any port, case-insensitively', () => {
    expect(checkHost('mcp.example.com', listed)).toEqual({ ok: true, hostname: 'mcp.example.com' });
    expect(checkHost('MCP.Example.com:8443', listed)).toEqual({ ok: true, hostname: 'mcp.example.com' });
  });

  test('an entry with a port matches that port only', () => {
    expect(checkHost('localhost:8080', listed).ok).toBe(true);
    expect(checkHost('localhost:9090', listed)).toMatchObject({ ok: false, errorCode: 'host_not_allowed' });
  });

  test('a missing or malformed Host is refused with its own code', () => {
    expect(checkHost(undefined, listed)).toMatchObject({ ok: false, errorCode: 'missing_host' });
    expect(checkHost('', listed)).toMatchObject({ ok: false, errorCode: 'missing_host' });
    expect(checkHost('a b', listed)).toMatchObject({ ok: false, errorCode: 'invalid_host' });
    expect(checkHost('user@mcp.example.com', listed)).toMatchObject({ ok: false, errorCode: 'invalid_host' });
    expect(checkHost('mcp.example.com/path', listed)).toMatchObject({ ok: false, errorCode: 'invalid_host' });
  });

  test('with no allowed hosts, loopback arrivals get the SDK localhost list and network arrivals any host', () => {
    expect(hostRuleFor([], true)).toEqual({ kind: 'list', hosts: LOCALHOST_NAMES });
    expect(checkHost('[::1]:3000', hostRuleFor([], true)).ok).toBe(true);
    expect(checkHost('rebound.evil.example', hostRuleFor([], true)).ok).toBe(false);
    expect(checkHost('svc-abc-ew.a.run.app', hostRuleFor([], false)).ok).toBe(true);
  });
});

describe('checkOrigin', () => {
  test('no Origin (a non-browser client) passes', () => {
    expect(checkOrigin(undefined, listed)).toEqual({ ok: true });
  });

  test('an Origin must name an allowed host; "null" and garbage are refused', () => {
    expect(checkOrigin('https://mcp.example.com', listed)).toEqual({ ok: true });
    expect(checkOrigin('https://evil.example', listed)).toMatchObject({ ok: false, errorCode: 'origin_not_allowed' });
    expect(checkOrigin('null', listed)).toMatchObject({ ok: false, errorCode: 'origin_not_allowed' });
  });

  test('with any host allowed, Origin is not checked', () => {
    expect(checkOrigin('https://elsewhere.example', hostRuleFor([], false))).toEqual({ ok: true });
  });
});
