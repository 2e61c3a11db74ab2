import { costProblem } from '../../src/http/cost-check';

const policy = { name: 'default', limit: 120, windowMs: 60_000 };

test.each([
  ['a cost within the limit', 1, undefined],
  ['a cost equal to the limit (a full window can hold it)', 120, undefined],
])('%s is not a problem', (_label, cost, expected) => {
  expect(costProblem(cost, [policy])).toEqual(expected);
});

test('a cost above the limit is a 413 that states the cost, the limit and the remedy, not a retry', () => {
  expect(costProblem(150, [policy], 7)).toEqual({
    status: 413,
    body: {
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32013,
        message: 'This batch costs 150 units; your limit is 120 per 60 s, so it can never be allowed. Split it into batches of at most 120 messages.',
        data: { reason: 'cost_exceeds_limit', cost: 150, limit: 120, windowSeconds: 60, policy: 'default' },
      },
    },
  });
});
