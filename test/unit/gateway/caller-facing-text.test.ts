import fc from 'fast-check';
import { ProtocolError } from '@modelcontextprotocol/client';
import { callerFacingText, secretsOfUpstreamAuthorization } from '../../../src/gateway/caller-facing-text';
import { upstreamErrorOf } from '../../../src/gateway/upstream-error';

const AUTHORIZATION = 'ApiKey up-key-7c1d9e2f5a';
const SECRETS = secretsOfUpstreamAuthorization(AUTHORIZATION);

describe("what a caller may read of the upstream's error text", () => {
  it.each([
    ['keeps what the caller needs to fix its request', 'MCP error -32602: Tool nope not found', 'Tool nope not found'],
    ['masks the configured credential the upstream echoed', 'bad params; you sent ApiKey up-key-7c1d9e2f5a', 'bad params; you sent [redacted]'],
    ['masks the credential alone', 'key up-key-7c1d9e2f5a is not allowed here', 'key [redacted] is not allowed here'],
    ['masks any scheme’s credential by shape', 'Invalid params: header was Bearer sk-live-abcdef123456', 'Invalid params: header was Bearer [redacted]'],
    ['drops a stack on the following lines', 'Invalid params: x\n    at handler (/srv/app/dist/tools.js:12:7)\n    at process', 'Invalid params: x'],
    ['drops a stack frame on the same line', 'TypeError: x is undefined at Object.<anonymous> (/srv/app/x.js:3:1)', 'TypeError: x is undefined'],
    ['hides file paths', 'cannot read /etc/app/secrets.json', 'cannot read [path]'],
    ['clips a long message', `Invalid params: ${'x'.repeat(500)}`, `Invalid params: ${'x'.repeat(183)}…`],
  ])('%s', (_name, message, expected) => {
    expect(callerFacingText(message, SECRETS)).toBe(expected);
  });

  it('a caller-facing JSON-RPC error keeps the upstream code and our scrubbed words; nothing of the secret remains', () => {
    const failure = upstreamErrorOf(new ProtocolError(-32602, `Invalid params for ${AUTHORIZATION}\n    at x (/srv/a.js:1:1)`), 1000, SECRETS);
    expect(failure.code).toBe(-32602);
    expect(failure.message).toBe('Invalid params for [redacted]');
  });

  it('a message that is nothing but a stack becomes our words with the code', () => {
    expect(upstreamErrorOf(new ProtocolError(-32602, '\n    at x (/srv/a.js:1:1)'), 1000, SECRETS).message).toBe('the upstream MCP server answered with error -32602');
  });

  it('property: the configured credential never survives, wherever it is put in the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), fc.string({ maxLength: 80 }), (before, after) => {
        const text = callerFacingText(`${before}up-key-7c1d9e2f5a${after}`, SECRETS);
        expect(text).not.toContain('up-key-7c1d9e2f5a');
        expect(text.length).toBeLessThanOrEqual(200);
        expect(text).not.toMatch(/\n/);
      }),
    );
  });
});
