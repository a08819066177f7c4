/**
 * A crawl a read command works on: its counters and config from the frontier table, its page store.
 * Undefined (with the one line that says so already on stderr) when the stack holds no such crawl.
 */
import { CrawlConfigStore } from '../lambdas/adapters/crawl-config-store.ts';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { S3Blobs } from '../lambdas/adapters/s3-blobs.ts';
import type { CrawlConfig, CrawlCounters } from '../lambdas/core/crawl/index.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import type { LocatedStack } from '../local/stack-locator.ts';
import type { CliIo } from './cli-io.ts';
import { noSuchCrawl } from './usage-failures.ts';

export interface StoredCrawl {
  counters: CrawlCounters;
  config: CrawlConfig;
  blobs: S3Blobs;
}

export async function openStoredCrawl(
  stack: LocatedStack,
  crawlId: string,
  io: Pick<CliIo, 'stderr'>,
): Promise<StoredCrawl | undefined> {
  const table = requiredOutput(stack.outputs, OUTPUTS.frontierTableName, stack.description);
  const counters = await createFrontierStore(stack.clients.dynamodb, table).readCounters(crawlId);
  if (!counters) {
    io.stderr.write(`${noSuchCrawl(crawlId, stack.description)}\n`);
    return undefined;
  }
  const config = await new CrawlConfigStore(stack.clients.dynamodb, table).get(crawlId);
  const bucket = requiredOutput(stack.outputs, OUTPUTS.pageBucketName, stack.description);
  return { counters, config, blobs: new S3Blobs(stack.clients.s3, bucket) };
}
