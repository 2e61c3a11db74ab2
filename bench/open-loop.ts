/**
 * An open-loop offer, as independent callers behind a load balancer make it:
 * from `startAtMs`, `total` calls at `perSecond`, each started on time
 * whether or not the earlier ones have answered. Resolves once every call has
 * settled, or `drainMs` after the offer's scheduled end, whichever is first;
 * `fire` must not reject (count its failures itself).
 */
export async function offerOpenLoop(startAtMs: number, perSecond: number, total: number, drainMs: number, fire: (index: number) => Promise<void>): Promise<void> {
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const endMs = startAtMs + (total * 1000) / perSecond;
  const pending: Promise<void>[] = [];
  await sleep(Math.max(0, startAtMs - Date.now()));
  let started = 0;
  while (started < total) {
    const dueMs = startAtMs + (started * 1000) / perSecond;
    if (Date.now() < dueMs) {
      await sleep(Math.min(5, dueMs - Date.now()));
      continue;
    }
    pending.push(fire(started++));
  }
  await Promise.race([Promise.all(pending), sleep(Math.max(0, endMs + drainMs - Date.now()))]);
}
