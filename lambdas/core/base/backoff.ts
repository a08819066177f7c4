/**
 * The crawler's one back-off formula: exponential from the policy's base, capped, with jitter so that
 * invocations that failed together do not retry together. Every retry uses it with a named policy from
 * `RETRY_BACKOFF` (limits.ts), so "how long does a retry wait" has one answer per kind of retry.
 */
import type { RETRY_BACKOFF } from './limits.ts';

export type BackoffPolicy = (typeof RETRY_BACKOFF)[keyof typeof RETRY_BACKOFF];

/**
 * The wait before retry number `attempt` (1 = the first retry): the ceiling is `baseMs · 2^(attempt-1)`
 * capped at `maxMs`; `full` jitter waits anywhere below it, `equal` jitter at least half of it, `none`
 * exactly it (a time that is stored and compared, as robots.txt's `retryAt`).
 */
export function backoffMs(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const doublings = Math.min(30, Math.max(0, attempt - 1));
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** doublings);
  switch (policy.jitter) {
    case 'full':
      return random() * ceiling;
    case 'equal':
      return ceiling / 2 + random() * (ceiling / 2);
    case 'none':
      return ceiling;
  }
}

/** `backoffMs` in whole seconds, at least 1: SQS delays and visibility timeouts are whole seconds. */
export function backoffSeconds(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  return Math.max(1, Math.round(backoffMs(attempt, policy, random) / 1000));
}

/** Sleeps `backoffMs(attempt, policy)`: the pause between in-process attempts. */
export function backoffPause(attempt: number, policy: BackoffPolicy): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, policy)));
}
