import type { Tool } from '@modelcontextprotocol/server';
import { QUOTA_META_KEY, quotaProtocolError, quotaToolResult } from '../../../src/mcp/upstream-quota-answer';

const T0 = Date.UTC(2026, 11, 1, 12);
const reserved = { status: 'reserved', quota: 'upstream', slotAtMs: T0 + 1300, retryAfterMs: 1300, reservation: 'r1.x' } as const;
const rejected = { status: 'rejected', quota: 'upstream', reason: 'token_reservations_full', retryAfterMs: 1300 } as const;
const plain: Tool = { name: 'echo', inputSchema: { type: 'object' } };
const schemed: Tool = { ...plain, outputSchema: { type: 'object', properties: { echoed: { type: 'string' } }, required: ['echoed'] } };

describe('quotaToolResult: figures where every client can read them', () => {
  it.each([
    ['a tool with an outputSchema: _meta only, so schema validation has nothing to refuse', schemed, false],
    ['a tool without one: structuredContent too, as before', plain, true],
  ])('%s', (_what, tool, structured) => {
    const result = quotaToolResult(reserved, tool, T0, 200);
    const figures = { status: 'reserved', quota: 'upstream', slotAtMs: T0 + 1300, retryAfterMs: 1300, reservation: 'r1.x' };
    expect(result.isError).toBe(true);
    expect(result._meta?.[QUOTA_META_KEY]).toEqual(figures);
    expect(result.structuredContent).toEqual(structured ? figures : undefined);
  });

  it('words a reservation in ms when whole seconds would pass the grace, and a rejection in whole seconds with its reason', () => {
    expect(JSON.stringify(quotaToolResult(reserved, plain, T0, 200).content)).toContain('call echo again in 1300 ms with the same arguments (not earlier, and within 200 ms after)');
    const text = JSON.stringify(quotaToolResult(rejected, plain, T0, 200).content);
    expect(text).toContain('your token already holds its share of the waiting slots');
    expect(text).toContain('Try again in 2 s');
    expect(quotaToolResult(rejected, plain, T0, 200)._meta?.[QUOTA_META_KEY]).toEqual({ status: 'rejected', quota: 'upstream', reason: 'token_reservations_full', retryAfterMs: 1300, retryAtMs: T0 + 1300 });
  });
});

describe('quotaProtocolError: a request without a tool result', () => {
  it('is the rate-limit code with the figures and the method in data', () => {
    const error = quotaProtocolError(reserved, 'resources/read', T0, 200);
    expect(error.code).toBe(-32029);
    expect(error.data).toEqual({ status: 'reserved', quota: 'upstream', slotAtMs: T0 + 1300, retryAfterMs: 1300, reservation: 'r1.x', method: 'resources/read' });
    expect(error.message).toContain('send the same resources/read again in 1300 ms');
  });
});
