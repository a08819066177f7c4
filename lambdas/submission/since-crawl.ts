/**
 * `--since ID|latest`: the finished crawl a re-crawl follows. `latest` is the crawl of the stack that
 * ended last (complete or cancelled); a crawl still running has no final index to start from.
 *
 * A crawl's counters expire 30 days after its last activity (docs/frontier.md), but its index and
 * summary stay in the page store: a crawl whose counters are gone is known ended by its
 * `summary.json`, so a monthly schedule's last run can still be followed.
 */
import { listCrawls } from '../adapters/frontier-crawls.ts';
import { createFrontierStore } from '../adapters/frontier-store.ts';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { type CrawlStateName, DEFAULT_CRAWL_ID } from '../core/crawl/index.ts';
import { OUTPUTS, summaryKey } from '../shared/contracts.ts';
import { requiredOutput } from '../shared/required-output.ts';
import type { StackHandles } from './stack-handles.ts';

export const LATEST = 'latest';

/** The crawl named by --since cannot be followed: one line saying why (exit 2, nothing stored). */
export class SinceError extends Error {
  override name = 'SinceError';
}

export async function resolveSince(stack: StackHandles, since: string): Promise<string> {
  const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName);
  if (since === LATEST) {
    let latest: { crawlId: string; endedAt: string } | undefined;
    for await (const { crawlId, counters } of listCrawls(stack.clients.dynamodb, table)) {
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
  const state = await crawlStateOf(stack, since);
  if (state === undefined)
    throw new SinceError(`--since ${since}: no such crawl here; \`crawler list\` shows the crawls`);
  if (state === 'running')
    throw new SinceError(
      `--since ${since}: that crawl is still running; a re-crawl follows a finished crawl (wait for it, or cancel it)`,
    );
  return since;
}

/**
 * A crawl's state from its counters, or, once they have expired, from its summary (written when it
 * completed or was cancelled); undefined for a crawl with neither.
 */
export async function crawlStateOf(
  stack: StackHandles,
  crawlId: string,
): Promise<CrawlStateName | undefined> {
  const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName);
  const counters = await createFrontierStore(stack.clients.dynamodb, table).readCounters(crawlId);
  if (counters !== undefined) return counters.state;
  const blobs = new S3Blobs(stack.clients.s3, requiredOutput(stack.outputs, OUTPUTS.pageBucketName));
  if (!(await blobs.exists(summaryKey(crawlId)))) return undefined;
  try {
    const { state } = JSON.parse(new TextDecoder().decode(await blobs.get(summaryKey(crawlId)))) as {
      state?: unknown;
    };
    return state === 'complete' || state === 'cancelled' ? state : undefined;
  } catch {
    return undefined;
  }
}
