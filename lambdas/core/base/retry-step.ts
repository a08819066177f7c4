import { backoffPause } from './backoff.ts';
import { RETRY_BACKOFF } from './limits.ts';

/**
 * In-function retries of a step that is safe to repeat: a failed AWS call (after the SDK's own
 * retries) costs a short pause, not the batch's whole output. `retryIf` limits the retries to the
 * errors after which repeating is safe (default: every error).
 */
export async function retryStep<T>(
  step: () => Promise<T>,
  attempts = 3,
  retryIf: (error: unknown) => boolean = () => true,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (attempt >= attempts || !retryIf(error)) throw error;
      // Jittered: concurrent invocations hitting one fault spread apart.
      await backoffPause(attempt, RETRY_BACKOFF.awsStep);
    }
  }
}
