/** A mistake in how the CLI was called: printed with usage, exit code 2, nothing else is touched. */
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';

export class UsageError extends Error {
  override name = 'UsageError';
}

/** Strict parseArgs with positionals; a malformed or unknown option becomes a UsageError with the command's usage. */
export function parseCommandArgs<T extends ParseArgsOptionsConfig>(
  args: string[],
  options: T,
  usage: string,
) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${usage}`);
  }
}
