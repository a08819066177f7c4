/**
 * `crawler list`: the crawls a state directory (or --endpoint, --stack) holds, one line each: id,
 * state, pages fetched, URLs done of queued, started; oldest first. A `running` crawl of a state dir
 * that no process runs is shown `interrupted`: `crawler crawl --resume ID` goes on with it.
 */
import { type CrawlListing, listCrawls } from '../lambdas/adapters/frontier-crawls.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import { write } from './cli-io.ts';
import { defineCommand } from './define-command.ts';
import { STACK_OPTIONS, STACK_USAGE, withStorage } from './stack-access.ts';
import { UsageError } from './usage-error.ts';

export const LIST_USAGE = `usage: crawler list [options]
the crawls in the local state (or at an endpoint, or a deployed stack): id, state, pages, started
  --json               one JSON object per line: {crawlId, state, pages, done, queued, startedAt, endedAt}
${STACK_USAGE}`;

export type ListedState = 'running' | 'complete' | 'cancelled' | 'interrupted';

export interface ListedCrawl {
  crawlId: string;
  state: ListedState;
  /** Fetched pages. */
  pages: number;
  done: number;
  queued: number;
  startedAt?: string;
  endedAt?: string;
}

/** `nobodyRuns`: no process runs the stack's handlers (an embedded state dir opened by this command). */
export function listedCrawl({ crawlId, counters }: CrawlListing, nobodyRuns: boolean): ListedCrawl {
  return {
    crawlId,
    state: counters.state === 'running' && nobodyRuns ? 'interrupted' : counters.state,
    pages: counters.byOutcome.fetched ?? 0,
    done: counters.done,
    queued: counters.queued,
    ...(counters.startedAt === undefined ? {} : { startedAt: counters.startedAt }),
    ...(counters.endedAt === undefined ? {} : { endedAt: counters.endedAt }),
  };
}

export const listCommand = defineCommand({
  usage: LIST_USAGE,
  options: { json: { type: 'boolean' }, ...STACK_OPTIONS },
  run: async ({ io, values, positionals }) => {
    if (positionals.length > 0) throw new UsageError(`list takes no arguments\n${LIST_USAGE}`);
    return withStorage(values, io, async (stack) => {
      const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description);
      const crawls: ListedCrawl[] = [];
      for await (const listing of listCrawls(stack.clients.dynamodb, table))
        crawls.push(listedCrawl(listing, stack.mode === 'embedded'));
      crawls.sort((a, b) => (a.startedAt ?? '').localeCompare(b.startedAt ?? ''));
      if (values.json) {
        for (const crawl of crawls) await write(io.stdout, `${JSON.stringify(crawl)}\n`);
        return 0;
      }
      if (crawls.length === 0) {
        io.stderr.write(`no crawls in ${stack.description}\n`);
        return 0;
      }
      const rows = [
        ['ID', 'STATE', 'PAGES', 'URLS', 'STARTED'],
        ...crawls.map((c) => [
          c.crawlId,
          c.state,
          String(c.pages),
          `${c.done}/${c.queued}`,
          c.startedAt ?? '-',
        ]),
      ];
      const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
      for (const row of rows)
        await write(
          io.stdout,
          `${row
            .map((cell, i) => cell.padEnd(widths[i]!))
            .join('  ')
            .trimEnd()}\n`,
        );
      return 0;
    });
  },
});
