/** Small helpers over raw header lists ([name, value] pairs as received). */
export function headerValue(headers: ReadonlyArray<[string, string]>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of headers) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/** Retry-After as milliseconds from `now`: delta-seconds or an HTTP date; undefined if absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
