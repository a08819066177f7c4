/** Exponential backoff with full jitter, in whole seconds (SQS visibility and delays are whole seconds). */
export interface BackoffPolicy {
  baseSeconds: number;
  maxSeconds: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseSeconds: 2, maxSeconds: 300 };

export function backoffSeconds(attempt: number, policy = DEFAULT_BACKOFF, random = Math.random): number {
  const ceiling = Math.min(policy.maxSeconds, policy.baseSeconds * 2 ** Math.max(0, attempt - 1));
  return Math.max(1, Math.round(ceiling / 2 + random() * (ceiling / 2)));
}
