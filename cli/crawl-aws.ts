/**
 * The local AWS a `crawler crawl` runs on: the embedded emulators (or --endpoint) with the synthesized
 * stack provisioned and its handlers in this process, and what the crawl reads of its invocations:
 * each function's invocations and duration (the counted cost), and each aggregate invocation's return
 * (completion is confirmed by one: the wait for the crawl's end reads again then, crawl-wait.ts).
 */
import type { LambdaUsage } from '../lambdas/shared/aws-prices.ts';
import { IDS, STACK_NAME } from '../lambdas/shared/contracts.ts';
import { parseTemplate } from '../local/cfn-template.ts';
import { type LocalAws, StateDirError, startLocalAws } from '../local/local-aws.ts';
import { stackTemplate } from '../local/stack-template.ts';
import { resolveStateDir } from '../local/state-dir.ts';
import type { CliIo } from './cli-io.ts';
import type { CrawlCommandOptions } from './crawl-options.ts';
import { UsageError } from './usage-error.ts';

export interface CrawlAws {
  local: LocalAws;
  /** Counted cost: handler durations by function (every AWS call is counted by the clients' middleware). */
  lambdaUsage: Record<string, LambdaUsage>;
  /** Calls `listener` whenever an aggregate invocation returns, until the function returned is called. */
  onAggregateReturn: (listener: () => void) => () => void;
}

/** Starts it as the options say; a state directory that cannot be used is a usage error naming --state-dir. */
export async function startCrawlAws(options: CrawlCommandOptions, io: CliIo): Promise<CrawlAws> {
  const lambdaUsage: Record<string, LambdaUsage> = {};
  const aggregateReturned = new Set<() => void>();
  const local = await startLocalAws({
    template: parseTemplate(await stackTemplate()),
    stackName: STACK_NAME,
    ...(options.endpoint ? { endpoint: options.endpoint } : { stateDir: resolveStateDir(options.stateDir) }),
    ...(options.concurrency ? { concurrencyOverride: { FetchFunction: options.concurrency } } : {}),
    handlerEnvOverrides: { LOG_LEVEL: options.quiet ? 'error' : 'warn' },
    // A local crawl's user sees its latency and its memory: a batch goes as soon as the queue
    // has no more, the handlers share this process, and so do its AWS calls (local/README.md).
    eagerBatches: true,
    inProcessHandlers: true,
    ...(options.endpoint ? {} : { inProcessAws: true }),
    ...(options.quiet ? {} : { onStaleLock: (line: string) => io.stderr.write(`${line}\n`) }),
    onInvocation: (report) => {
      const id = report.functionLogicalId;
      // Completion is confirmed by an aggregate invocation: the wait reads again when one returns.
      if (id === IDS.aggregateFunction) for (const listener of aggregateReturned) listener();
      const fn = local.stack.functions[id];
      const usage = lambdaUsage[id] ?? {
        invocations: 0,
        durationMs: 0,
        memoryMb: fn?.memorySizeMb ?? 0,
        architecture: fn?.architecture ?? 'arm64',
      };
      usage.invocations++;
      usage.durationMs += report.durationMs;
      lambdaUsage[id] = usage;
    },
  }).catch((error: unknown) => {
    throw error instanceof StateDirError ? new UsageError(`--state-dir ${error.message}`) : error;
  });
  return {
    local,
    lambdaUsage,
    onAggregateReturn: (listener) => {
      aggregateReturned.add(listener);
      return () => aggregateReturned.delete(listener);
    },
  };
}
