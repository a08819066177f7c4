/** How a URL ended. Every URL of a crawl ends with exactly one of these. */
export const OUTCOMES = [
  'fetched',
  'redirected',
  'disallowed',
  'skipped',
  'failed',
  'blocked',
  'invalid',
  /** The crawl was cancelled (`crawler cancel`) before this URL was fetched. */
  'cancelled',
] as const;

export type Outcome = (typeof OUTCOMES)[number];

export function isOutcome(value: string): value is Outcome {
  return (OUTCOMES as readonly string[]).includes(value);
}
