/**
 * How a failed command is told to a person: one line saying what went wrong and what to do, and the
 * exit code (2: the command line was wrong, nothing was touched; 1: it could not be done). The stack
 * trace is for `--debug` only.
 */
import { StateLockedError } from '../local/state-lock.ts';
import { UsageError } from './usage-error.ts';

export interface Failure {
  exitCode: 1 | 2;
  line: string;
}

/** System error codes of a host that cannot be reached (connect, DNS): nothing the CLI can retry into working. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
]);

export function describeFailure(error: unknown, command: string): Failure {
  if (error instanceof UsageError)
    return { exitCode: 2, line: `crawler ${command}: ${firstLine(error.message)}` };
  if (error instanceof StateLockedError) return { exitCode: 1, line: `crawler ${command}: ${error.message}` };
  const unreachable = describeUnreachable(error);
  if (unreachable !== undefined) return { exitCode: 1, line: `crawler ${command}: ${unreachable}` };
  const message = error instanceof Error ? `${error.name}: ${firstLine(error.message)}` : String(error);
  return {
    exitCode: 1,
    line: `crawler ${command} failed: ${message} (run it again with --debug for the stack trace)`,
  };
}

/**
 * "cannot reach 127.0.0.1:4566 (ECONNREFUSED); ..." when `error` (or one it was caused by) is a
 * connection or DNS failure; undefined for any other error.
 */
export function describeUnreachable(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  for (
    let e: unknown = error;
    typeof e === 'object' && e !== null && !seen.has(e);
    e = Reflect.get(e, 'cause')
  ) {
    seen.add(e);
    const code = Reflect.get(e, 'code');
    if (typeof code === 'string' && UNREACHABLE.has(code)) {
      const address = Reflect.get(e, 'address') ?? Reflect.get(e, 'hostname');
      const port = Reflect.get(e, 'port');
      const where =
        typeof address === 'string'
          ? `${address}${port === undefined ? '' : `:${String(port)}`}`
          : 'the endpoint';
      return `cannot reach ${where} (${code}); start the AWS it points at (\`crawler local\`, LocalStack) or fix --endpoint`;
    }
    const nested = Reflect.get(e, 'errors'); // AggregateError: one per address tried
    if (Array.isArray(nested) && nested.length > 0) {
      const inner = describeUnreachable(nested[0]);
      if (inner !== undefined) return inner;
    }
  }
  return undefined;
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? '';
}

/** A crawl id that the AWS looked in does not know: the id is wrong, or the crawl ran elsewhere. */
export function noSuchCrawl(crawlId: string, where: string): string {
  return `no crawl ${crawlId} in ${where}; check the id, or point at where it ran (--endpoint, --stack, --state-dir)`;
}
