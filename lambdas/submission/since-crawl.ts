/**
 * `--since ID|latest`: the finished crawl a re-crawl follows. `latest` is the crawl of the stack that
 * ended last (complete or cancelled); a crawl still running has no final index to start from.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { listCrawls } from '../adapters/frontier-crawls.ts';
import { createFrontierStore } from '../adapters/frontier-store.ts';
import { DEFAULT_CRAWL_ID } from '../core/crawl-config.ts';

export const LATEST = 'latest';

/** The crawl named by --since cannot be followed: one line saying why (exit 2, nothing stored). */
export class SinceError extends Error {
  override name = 'SinceError';
}

export async function resolveSince(dynamodb: DynamoDBClient, table: string, since: string): Promise<string> {
  if (since === LATEST) {
    let latest: { crawlId: string; endedAt: string } | undefined;
    for await (const { crawlId, counters } of listCrawls(dynamodb, table)) {
      if (crawlId === DEFAULT_CRAWL_ID || counters.state === 'running' || counters.endedAt === undefined)
        continue;
      if (latest === undefined || counters.endedAt > latest.endedAt)
        latest = { crawlId, endedAt: counters.endedAt };
    }
    if (latest === undefined)
      throw new SinceError(
        '--since latest: no finished crawl here to follow; `crawler list` shows the crawls',
      );
    return latest.crawlId;
  }
  const counters = await createFrontierStore(dynamodb, table).readCounters(since);
  if (counters === undefined)
    throw new SinceError(`--since ${since}: no such crawl here; \`crawler list\` shows the crawls`);
  if (counters.state === 'running')
    throw new SinceError(
      `--since ${since}: that crawl is still running; a re-crawl follows a finished crawl (wait for it, or cancel it)`,
    );
  return since;
}
