import { MAX_CALL_COST, parseToolCosts, TOOL_NAME } from '../../src/library/mcp/tool-costs';

describe('parseToolCosts: the edges of tool=cost', () => {
  test.each<[string, [string, number][]]>([
    ['search=25', [['search', 25]]],
    [`search=${MAX_CALL_COST}`, [['search', MAX_CALL_COST]]],
    ['search=5,,whoami=1,', [['search', 5], ['whoami', 1]]],
    [`${'a'.repeat(128)}=1`, [['a'.repeat(128), 1]]],
    ['A-z_0.9=2', [['A-z_0.9', 2]]],
  ])('%p is accepted', (text, costs) => {
    expect(parseToolCosts(text)).toEqual({ ok: true, costs: new Map(costs) });
  });

  test.each([
    `search=${MAX_CALL_COST + 1}`,
    `${'a'.repeat(129)}=1`,
    '!search=1',
    'search!=1',
    '=1',
    'search=',
    'search=1=2',
  ])('%p is refused, naming the entry', (text) => {
    const parsed = parseToolCosts(text);
    expect(parsed).toEqual({ ok: false, problem: `"${text}" is not tool=cost (a tool name of A-Z a-z 0-9 _ - ., a whole cost from 0 to ${MAX_CALL_COST})` });
  });

  test('a refusal stops at the first bad entry', () => {
    expect(parseToolCosts('a=1,b,c=x')).toEqual({ ok: false, problem: expect.stringMatching(/^"b" is not tool=cost/) });
  });

  test('TOOL_NAME takes 1 to 128 of the specification characters', () => {
    expect(['a', 'a'.repeat(128), 'files.read', 'x-y_z'].every((n) => TOOL_NAME.test(n))).toBe(true);
    expect(['', 'a'.repeat(129), 'a b', 'a/b', 'ä'].some((n) => TOOL_NAME.test(n))).toBe(false);
  });
});
