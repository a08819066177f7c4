/**
 * How `crawler crawl` begins on its local AWS: a new crawl is submitted (lambdas/submission/submit-crawl.ts;
 * a seeds file or --since found wrong there is a mistake to fix, as a usage error), a `--resume ID`
 * crawl is read back from the stack with its stored config. Apart from crawl-command.ts, which runs
 * either the same way once it has begun.
 */

import { CrawlConfigStore } from '../lambdas/adapters/crawl-config-store.ts';
import type { FrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { describeSeedSource, SeedSourceError, seedSourceLines } from '../lambdas/adapters/seed-source.ts';
import { type CrawlConfig, seedCount } from '../lambdas/core/crawl/index.ts';
import { SinceError } from '../lambdas/submission/since-crawl.ts';
import { sinceNote, submitCrawl } from '../lambdas/submission/submit-crawl.ts';
import type { LocalAws } from '../local/local-aws.ts';
import type { CliIo } from './cli-io.ts';
import type { CrawlCommandOptions } from './crawl-options.ts';
import { UsageError } from './usage-error.ts';

/** Where the crawl begins, and where it reports. */
export interface CrawlStartContext {
  io: CliIo;
  options: CrawlCommandOptions;
  crawlId: string;
  local: LocalAws;
  progress: (line: string) => void;
}

/** A crawl begun: its config, and the number of seeds it was submitted with (a seeds file's included). */
export interface CrawlStart {
  config: CrawlConfig;
  seeds: number;
}

/** Submits the new crawl `config`, with the sitemap's URLs. */
export async function submitLocalCrawl(
  { io, options, crawlId, local, progress }: CrawlStartContext,
  config: CrawlConfig,
  sitemapUrls: readonly string[],
): Promise<CrawlStart> {
  const source = options.seedsFile;
  const submitted = await submitCrawl(local, config, sitemapUrls, {
    ...(options.since === undefined ? {} : { since: options.since }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    onWarning: (line: string) => io.stderr.write(`${line}\n`),
    ...(source === undefined
      ? {}
      : {
          seedFile: {
            name: describeSeedSource(source),
            lines: () => seedSourceLines(source, local.clients.s3),
          },
          onInvalidSeed: progress,
          onProgress: (p) => {
            if (p.total > 500) progress(`crawl ${crawlId}: ${p.done}/${p.total} seeds sent`);
          },
        }),
  }).catch((error: unknown) => {
    // Before the crawl started (its scope is read first): a mistake to fix, as a missing --file is.
    throw error instanceof SeedSourceError || error instanceof SinceError
      ? new UsageError(error.message)
      : error;
  });
  progress(
    `crawl ${crawlId}: ${submitted.tasks} seed tasks sent` +
      (submitted.due === undefined ? '' : `; ${sinceNote(submitted)}`),
  );
  return { config, seeds: submitted.seeds };
}

/** The crawl `--resume` names, as stored; none (a line on stderr) when the stack has no such crawl. */
export async function resumeLocalCrawl(
  { io, options, crawlId, local, progress }: CrawlStartContext,
  frontier: FrontierStore,
  table: string,
): Promise<CrawlStart | undefined> {
  if (!(await frontier.readCounters(crawlId))) {
    io.stderr.write(
      `crawler crawl: no crawl ${crawlId} to resume in ${local.stateDir ?? options.endpoint}; \`crawler list\` shows the crawls there\n`,
    );
    return undefined;
  }
  const config = await new CrawlConfigStore(local.clients.dynamodb, table).get(crawlId);
  progress(`crawl ${crawlId}: resuming`);
  return { config, seeds: seedCount(config) };
}
