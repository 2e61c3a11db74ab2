import type { Writable } from 'node:stream';

/** Past this many buffered characters a batch goes out at once rather than at the end of the tick. */
const MAX_BATCH_CHARS = 64 * 1024;

/** Writes whole lines (each ending in "\n") to an output. */
export type LineWriter = (line: string) => void;

const pendingBatches = new Set<() => void>();
let exitHookInstalled = false;

/**
 * Lines to `output`, one write per line or, with `batch`, one write per turn
 * of the event loop: process.stdout on a pipe or a file (Cloud Run's case)
 * writes synchronously, a system call per write, so a busy instance pays one
 * per request without batching. A batch is written on setImmediate, at once
 * past MAX_BATCH_CHARS, and on process exit (stdout is synchronous there, so
 * the last lines before a crash or process.exit still go out).
 */
export function createLineWriter(output: Writable, options: { readonly batch: boolean }): LineWriter {
  if (!options.batch) return (line) => void output.write(line);
  let buffered = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    pendingBatches.delete(flush);
    if (buffered === '') return;
    const text = buffered;
    buffered = '';
    output.write(text);
  };
  installExitHook();
  return (line) => {
    buffered += line;
    if (buffered.length >= MAX_BATCH_CHARS) {
      flush();
      return;
    }
    if (scheduled) return;
    scheduled = true;
    pendingBatches.add(flush);
    setImmediate(flush);
  };
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const flush of [...pendingBatches]) flush();
  });
}
