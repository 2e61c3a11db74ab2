import fc from 'fast-check';
import { formatReservationId, parseReservationId } from '../../../src/gateway/reservation-id';

describe('reservation ids: what a call echoes, read back or ignored', () => {
  it('round-trips every quota key and slot', () => {
    fc.assert(
      fc.property(fc.constantFrom('upstream', 'tool:search', 'tool:files.read', 'tool:a%2Eb'), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (key, slotAtMs) => {
        expect(parseReservationId(formatReservationId({ key, slotAtMs }))).toEqual({ key, slotAtMs });
      }),
    );
  });

  it.each([
    ['not a string', 1_796_126_400_500],
    ['an object', { key: 'upstream', slotAtMs: 1 }],
    ['without the version', Buffer.from('upstream|1').toString('base64url')],
    ['another version', `r2.${Buffer.from('upstream|1').toString('base64url')}`],
    ['not base64url', 'r1.not base64!'],
    ['no slot', `r1.${Buffer.from('upstream|').toString('base64url')}`],
    ['a negative slot', `r1.${Buffer.from('upstream|-1').toString('base64url')}`],
    ['a slot past 2^53', `r1.${Buffer.from('upstream|9007199254740993').toString('base64url')}`],
    ['a key with a separator in it', `r1.${Buffer.from('up|stream|1').toString('base64url')}`],
    ['very long', `r1.${'A'.repeat(1000)}`],
  ])('%s: not ours, so the call is one that echoes nothing', (_what, value) => {
    expect(parseReservationId(value)).toBeUndefined();
  });
});
