/**
 * `crawler status ID`: a crawl's state and counters from the FrontierTable (docs/frontier.md,
 * "Counters and completion"): queued, done, by outcome, bytes, requests, pages/s, start and end.
 * Human text by default, `--json` for one JSON object.
 */
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { OUTCOMES, type Outcome } from '../lambdas/core/base/index.ts';
import { summaryFromCounters } from '../lambdas/core/batches/index.ts';
import type { CrawlCounters } from '../lambdas/core/crawl/index.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import { write } from './cli-io.ts';
import { defineCommand } from './define-command.ts';
import { STACK_OPTIONS, STACK_USAGE, withStorage } from './stack-access.ts';
import { UsageError } from './usage-error.ts';
import { noSuchCrawl } from './usage-failures.ts';

export const STATUS_USAGE = `usage: crawler status ID [options]
  --json               print one JSON object instead of text
${STACK_USAGE}`;

export interface CrawlStatus {
  crawlId: string;
  state: CrawlCounters['state'];
  queued: number;
  done: number;
  /** queued - done (never negative): URLs admitted and not finished yet. */
  pending: number;
  byOutcome: Record<Outcome, number>;
  bytes: number;
  requests: number;
  startedAt?: string;
  endedAt?: string;
  /** From startedAt to endedAt, or to now while running. */
  seconds?: number;
  /** Fetched pages per second over `seconds`. */
  pagesPerSecond?: number;
}

export function crawlStatus(crawlId: string, counters: CrawlCounters, now: Date): CrawlStatus {
  const summary = summaryFromCounters(crawlId, counters, now);
  return {
    crawlId,
    state: counters.state,
    queued: counters.queued,
    done: counters.done,
    pending: Math.max(0, counters.queued - counters.done),
    byOutcome: summary.byOutcome,
    bytes: counters.bytes,
    requests: counters.requests,
    ...(counters.startedAt === undefined ? {} : { startedAt: counters.startedAt }),
    ...(counters.endedAt === undefined ? {} : { endedAt: counters.endedAt }),
    ...(summary.seconds === undefined ? {} : { seconds: summary.seconds }),
    ...(summary.pagesPerSecond === undefined ? {} : { pagesPerSecond: summary.pagesPerSecond }),
  };
}

export function describeStatus(status: CrawlStatus): string {
  const outcomes = OUTCOMES.filter((o) => status.byOutcome[o] > 0)
    .map((o) => `${o} ${status.byOutcome[o]}`)
    .join(', ');
  const pad = (label: string) => `  ${`${label}:`.padEnd(10)}`;
  return [
    `crawl ${status.crawlId}: ${status.state}`,
    `${pad('urls')}${status.done} done of ${status.queued} queued (${status.pending} pending)`,
    `${pad('outcomes')}${outcomes || 'none yet'}`,
    `${pad('bytes')}${status.bytes}`,
    `${pad('requests')}${status.requests}`,
    `${pad('pages/s')}${status.pagesPerSecond ?? '-'}`,
    `${pad('started')}${status.startedAt ?? '-'}`,
    `${pad('ended')}${status.endedAt ?? '-'}${status.seconds === undefined ? '' : ` (${status.seconds} s)`}`,
  ].join('\n');
}

export const statusCommand = defineCommand({
  usage: STATUS_USAGE,
  options: { json: { type: 'boolean' }, ...STACK_OPTIONS },
  run: async ({ io, values, positionals }) => {
    if (positionals.length !== 1) throw new UsageError(`status needs exactly one crawl id\n${STATUS_USAGE}`);
    const crawlId = positionals[0]!;
    return withStorage(values, io, async (stack) => {
      const frontier = createFrontierStore(
        stack.clients.dynamodb,
        requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description),
      );
      const counters = await frontier.readCounters(crawlId);
      if (!counters) {
        io.stderr.write(`${noSuchCrawl(crawlId, stack.description)}\n`);
        return 1;
      }
      const status = crawlStatus(crawlId, counters, new Date());
      await write(
        io.stdout,
        values.json ? `${JSON.stringify(status, null, 2)}\n` : `${describeStatus(status)}\n`,
      );
      return 0;
    });
  },
});
