/** A mistake in how the CLI was called: one line naming the option and what it accepts; exit code 2, nothing touched. */
export class UsageError extends Error {
  override name = 'UsageError';
}
