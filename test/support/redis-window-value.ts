/** The value layout the script reads and writes, for tests and tools that inspect a key. */
export function formatRedisWindowValue(windowNumber: number, count: number): string {
  return `${windowNumber}:${count}`;
}

export function parseRedisWindowValue(value: string | null): { windowNumber: number; count: number } | null {
  if (value === null) return null;
  const match = /^(-?\d+):(\d+)$/.exec(value);
  if (match === null) return null;
  return { windowNumber: Number(match[1]), count: Number(match[2]) };
}
