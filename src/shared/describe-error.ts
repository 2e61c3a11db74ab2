/** A log-safe description: the error's class and code, never its message (it may embed a URL with a password). */
export function describeError(error: unknown): string | undefined {
  if (error === undefined || error === null) return undefined;
  if (typeof error !== 'object') return typeof error;
  const code = (error as { code?: unknown }).code;
  return [errorClassName(error), typeof code === 'string' || typeof code === 'number' ? String(code) : undefined]
    .filter(Boolean)
    .join(':');
}

/** `name`, or the constructor's name when `name` is the generic 'Error' (node-redis's error classes never set it). */
function errorClassName(error: object): string {
  const name = (error as { name?: unknown }).name;
  if (typeof name === 'string' && name !== 'Error') return name;
  const constructorName = (error as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof constructorName === 'string' && constructorName !== '' && constructorName !== 'Object' ? constructorName : 'Error';
}
