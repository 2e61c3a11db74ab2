/** Past this many distinct inputs a memo starts over. */
export const MAX_MEMO_ENTRIES = 4096;

/**
 * `compute`, a pure function of one string, with its answers kept: for the
 * header values and addresses the same few clients send on every request.
 * Past MAX_MEMO_ENTRIES distinct inputs the memo starts over, so a spray of
 * forged values costs no more memory than that, and no more time than no memo.
 */
export function boundedMemo<R>(compute: (input: string) => R): (input: string) => R {
  const memo = new Map<string, R>();
  return (input) => {
    if (memo.has(input)) return memo.get(input) as R;
    const result = compute(input);
    if (memo.size >= MAX_MEMO_ENTRIES) memo.clear();
    memo.set(input, result);
    return result;
  };
}
