/**
 * How every command that reads or changes a crawl finds the AWS it ran on: `--endpoint` (a running
 * `crawler local` or LocalStack), `--stack` (a deployed stack) or the embedded state dir, and the frame
 * that opens it, runs the command and closes it.
 */
import type { LocatedStack } from '../local/stack-locator.ts';
import { resolveStateDir } from '../local/state-dir.ts';
import { type CliIo, writingTo } from './cli-io.ts';
import { UsageError } from './usage-error.ts';
import { describeUnreachable } from './usage-failures.ts';

/** The options every read-only command takes to find the AWS a crawl ran on (for parseArgs). */
export const STACK_OPTIONS = {
  endpoint: { type: 'string' },
  stack: { type: 'string' },
  'state-dir': { type: 'string' },
} as const;

export const STACK_USAGE = `  --endpoint URL       a running local AWS (\`crawler local\`) or LocalStack
  --stack NAME         a deployed stack (outputs from CloudFormation)
  --state-dir DIR      the embedded AWS's state (default: $CRAWLER_STATE_DIR or .crawler)`;

/** The AWS a read command was pointed at could not be opened (no state, not provisioned, unreachable). */
export class StackNotFoundError extends Error {
  override name = 'StackNotFoundError';
}

/**
 * What a command needs of the stack: `storage`, only the page store and the frontier table (a
 * local state then opens without provisioning: local/stack-locator.ts); `all`, queues too.
 */
export type StackNeeds = 'storage' | 'all';

export async function openStack(
  values: { endpoint?: string | undefined; stack?: string | undefined; 'state-dir'?: string | undefined },
  io: Pick<CliIo, 'locate' | 'describeStackOutputs'>,
  needs: StackNeeds = 'all',
): Promise<LocatedStack> {
  if (values.endpoint !== undefined && !/^https?:\/\//.test(values.endpoint)) {
    throw new UsageError(
      `--endpoint expects an http(s) URL such as http://127.0.0.1:4566, got ${values.endpoint}`,
    );
  }
  const stateDir = resolveStateDir(values['state-dir']);
  // A deployed stack's outputs come from CloudFormation (loaded only for --stack: it is a big client).
  const describeStackOutputs =
    io.describeStackOutputs ??
    (values.stack === undefined
      ? undefined
      : (await import('./stack-outputs.ts')).stackOutputsReader(values.endpoint));
  try {
    return await io.locate({
      stateDir,
      ...(needs === 'storage' ? { storageOnly: true } : {}),
      ...(values.endpoint === undefined ? {} : { endpoint: values.endpoint }),
      ...(values.stack === undefined ? {} : { stackName: values.stack }),
      ...(describeStackOutputs ? { describeStackOutputs } : {}),
    });
  } catch (error) {
    const where =
      values.stack !== undefined
        ? `stack ${values.stack}`
        : values.endpoint !== undefined
          ? `the AWS at ${values.endpoint}`
          : `the local state in ${stateDir}`;
    throw new StackNotFoundError(
      `cannot open ${where}: ${describeUnreachable(error) ?? (error instanceof Error ? error.message : String(error))}`,
      { cause: error },
    );
  }
}

/**
 * The frame of a read-only command: finds the stack, runs `body` on it, closes it. Output to a reader
 * that went away ends quietly (see `writingTo`); a stack that cannot be opened is a one-line error
 * on stderr and exit code 1.
 */
export function withStack(
  values: { endpoint?: string | undefined; stack?: string | undefined; 'state-dir'?: string | undefined },
  io: CliIo,
  body: (stack: LocatedStack) => Promise<number>,
  needs: StackNeeds = 'all',
): Promise<number> {
  return writingTo(io.stdout, async () => {
    let stack: LocatedStack;
    try {
      stack = await openStack(values, io, needs);
    } catch (error) {
      if (!(error instanceof StackNotFoundError)) throw error;
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    try {
      return await body(stack);
    } finally {
      await stack.close();
    }
  });
}

/** withStack for a command that reads only the page store and the frontier table (StackNeeds). */
export function withStorage(
  values: { endpoint?: string | undefined; stack?: string | undefined; 'state-dir'?: string | undefined },
  io: CliIo,
  body: (stack: LocatedStack) => Promise<number>,
): Promise<number> {
  return withStack(values, io, body, 'storage');
}
