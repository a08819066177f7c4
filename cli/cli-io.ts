/**
 * A command's streams and stack locator (injectable: tests pass their own), and writing to a reader
 * that may go away (`crawler results ID | head` ends quietly, as `cat` does).
 */
import type { Writable } from 'node:stream';
import type { DescribeStackOutputs, LocatedStack, LocateStackOptions } from '../local/stack-locator.ts';

export type Locate = (options: LocateStackOptions) => Promise<LocatedStack>;

/** Streams and a stack locator, injectable for tests. */
export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  locate: Locate;
  /** For `--stack NAME` (a deployed stack): its CloudFormation outputs (cli/stack-outputs.ts). */
  describeStackOutputs?: DescribeStackOutputs;
}

/** Loaded on first use: a command that never opens a stack (`crawler robots`) does not pay for the AWS SDK. */
const locateLazily: Locate = async (options) =>
  (await import('../local/stack-locator.ts')).locateStack(options);

export function cliIo(overrides: Partial<CliIo> = {}): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, locate: locateLazily, ...overrides };
}

/** The reader of the output went away (EPIPE, e.g. `crawler results ID | head`), or the stream failed. */
export class OutputClosedError extends Error {
  override name = 'OutputClosedError';
}

/** Writes `chunk`, waiting while the stream's buffer is full (so a slow pipe does not fill memory). */
export async function write(stream: Writable, chunk: string | Uint8Array): Promise<void> {
  if (stream.destroyed || stream.writableEnded) throw new OutputClosedError('output closed');
  if (stream.write(chunk)) return;
  await new Promise<void>((resolve, reject) => {
    const settle = (error?: unknown) => {
      stream.off('drain', settle);
      stream.off('error', settle);
      stream.off('close', closed);
      if (error) reject(new OutputClosedError('output failed', { cause: error }));
      else resolve();
    };
    const closed = () => settle(new Error('closed'));
    stream.on('drain', settle);
    stream.on('error', settle);
    stream.on('close', closed);
  });
}

/**
 * Runs a command that writes to `stream`. A reader that goes away (EPIPE) ends the command quietly
 * with `run`'s exit code 0, as `cat` does; any other stream error is thrown.
 */
export async function writingTo(stream: Writable, run: () => Promise<number>): Promise<number> {
  let failure: NodeJS.ErrnoException | undefined;
  const onError = (error: NodeJS.ErrnoException) => {
    failure ??= error;
  };
  stream.on('error', onError);
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof OutputClosedError)) throw error;
    const cause = failure ?? (error.cause as NodeJS.ErrnoException | undefined);
    if (cause === undefined || cause.code === 'EPIPE') return 0;
    throw cause;
  } finally {
    stream.off('error', onError);
  }
}
