/**
 * In-function retries of a step that is safe to repeat: a failed AWS call (after the SDK's own
 * retries) costs a short pause, not the batch's whole output.
 */
export async function retryStep<T>(step: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (attempt >= attempts) throw error;
      // Full jitter up to 100 ms, 200 ms, ...: concurrent invocations hitting one fault spread apart.
      await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt * Math.random()));
    }
  }
}
