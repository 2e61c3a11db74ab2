import { OutageGuard } from '../../src/library/limiter/outage-guard';
import { WaitBudget } from '../../src/library/limiter/wait-budget';
import { silentLogger } from '../../src/shared/logger';

/** A call that ends when the test says so, on a clock the test moves. */
function manual() {
  const clock = { nowMs: 0 };
  const ends: (() => void)[] = [];
  const call = () =>
    new Promise<void>((resolve) => {
      ends.push(resolve);
    });
  return { clock, ends, call };
}

describe('WaitBudget: one request waits for its shared stores at most its total', () => {
  it('counts real time by default (performance.now)', async () => {
    const budget = new WaitBudget(10_000);
    await budget.around(() => new Promise((resolve) => setTimeout(resolve, 20)));
    const left = budget.leftMs();
    expect(left).toBeLessThanOrEqual(9_981);
    expect(left).toBeGreaterThan(9_000);
  });

  test.each([
    // [name, steps: [start|end index|advance ms], left at the end]
    ['nothing waited: all of it left', [], 500],
    ['one call of 200 ms', [['start'], ['advance', 200], ['end', 0]], 300],
    ['two calls one after the other add up', [['start'], ['advance', 200], ['end', 0], ['advance', 1_000], ['start'], ['advance', 250], ['end', 1]], 50],
    ['two calls at once count once', [['start'], ['start'], ['advance', 300], ['end', 0], ['end', 1]], 200],
    ['overlapping calls count the time any is in flight', [['start'], ['advance', 100], ['start'], ['advance', 100], ['end', 0], ['advance', 100], ['end', 1]], 200],
    ['time between calls (a body being read) does not count', [['start'], ['advance', 100], ['end', 0], ['advance', 5_000]], 400],
    ['never below zero', [['start'], ['advance', 900], ['end', 0]], 0],
    ['a call still in flight counts while it runs', [['start'], ['advance', 120]], 380],
    ['a call in flight after an earlier one counts from its own start', [['start'], ['advance', 100], ['end', 0], ['advance', 1_000], ['start'], ['advance', 50]], 350],
  ] as const)('%s', async (_name, steps, left) => {
    const { clock, ends, call } = manual();
    const budget = new WaitBudget(500, () => clock.nowMs);
    const running: Promise<void>[] = [];
    for (const step of steps as readonly (readonly [string, number?])[]) {
      if (step[0] === 'start') running.push(budget.around(call));
      else if (step[0] === 'advance') clock.nowMs += step[1] ?? 0;
      else {
        ends[step[1] ?? 0]?.();
        await running[step[1] ?? 0];
      }
    }
    expect(budget.leftMs()).toBe(left);
  });

  test('refuses a total that is not a positive number, naming it', () => {
    expect(() => new WaitBudget(0)).toThrow('WaitBudget: totalMs must be a positive number, got 0');
  });
});

describe('OutageGuard with a request wait budget', () => {
  const guardOf = () => new OutageGuard({ backend: 'redis', timeoutMs: 500, probeIntervalMs: 5_000, logger: silentLogger });

  test('with nothing left the call is not sent, and no outage opens', async () => {
    const guard = guardOf();
    // A budget spent to the last millisecond by another call of the request.
    const clock = { nowMs: 0 };
    const used = new WaitBudget(100, () => clock.nowMs);
    const other = used.around(() => new Promise<void>((resolve) => setImmediate(resolve)));
    clock.nowMs = 100;
    await other;
    let sent = 0;
    const result = await guard.run(async () => {
      sent++;
      return 1;
    }, used);
    expect(result).toEqual({ ok: false, cause: 'timeout' });
    expect(sent).toBe(0);
    expect(guard.state.open).toBe(false);
  });

  test('a call cut short by the budget that times out does not open an outage; one given the full deadline does', async () => {
    const guard = guardOf();
    const short = new WaitBudget(20);
    const hung = () => new Promise<number>(() => undefined);
    const cut = await guard.run(hung, short);
    expect(cut).toMatchObject({ ok: false, cause: 'timeout' });
    expect(guard.state.open).toBe(false);
    const fast = new OutageGuard({ backend: 'redis', timeoutMs: 20, probeIntervalMs: 5_000, logger: silentLogger });
    expect(await fast.run(hung, new WaitBudget(500))).toMatchObject({ ok: false, cause: 'timeout' });
    expect(fast.state.open).toBe(true);
  });
});
