/**
 * Starts a crawl on a running stack (embedded, endpoint or deployed): stores its config once, admits
 * the seeds through the frontier like any discovered link (scope, dedup, page budget), and sends the
 * seed tasks and any skipped results in batches. A seed that is not a valid URL is still sent, so it
 * ends as an `invalid` result with its reason.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { CrawlConfigStore } from '../lambdas/adapters/crawl-config-store.ts';
import { createFrontierStore } from '../lambdas/adapters/frontier-store.ts';
import { SqsResultSender, SqsTaskSender } from '../lambdas/adapters/queues.ts';
import type { CrawlConfig } from '../lambdas/core/crawl-config.ts';
import { admitLinks } from '../lambdas/core/link-admission.ts';
import { LruSet } from '../lambdas/core/lru.ts';
import { normalizeUrl } from '../lambdas/core/url-normalize.ts';

export interface StackHandles {
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient };
  outputs: Record<string, string>;
}

export function requiredOutput(outputs: Record<string, string>, name: string): string {
  const value = outputs[name];
  if (!value) throw new Error(`the stack has no ${name} output; is it the serverless-crawler stack?`);
  return value;
}

/** `sitemapUrls` are admitted like seeds but do not widen the scope (it comes from `config.seeds`). */
export async function submitCrawl(
  stack: StackHandles,
  config: CrawlConfig,
  sitemapUrls: readonly string[] = [],
): Promise<{ tasks: number; skipped: number; invalid: number }> {
  const table = requiredOutput(stack.outputs, 'FrontierTableName');
  const tasks = new SqsTaskSender(stack.clients.sqs, requiredOutput(stack.outputs, 'TaskQueueUrl'));
  const results = new SqsResultSender(stack.clients.sqs, requiredOutput(stack.outputs, 'ResultsQueueUrl'));
  await new CrawlConfigStore(stack.clients.dynamodb, table).put(config);

  const valid = config.seeds.filter(
    (seed) => normalizeUrl(seed, { maxUrlLength: config.limits.maxUrlLength }).ok,
  );
  const invalid = config.seeds.filter((seed) => !valid.includes(seed));
  const admitted = await admitLinks(
    [
      {
        config,
        parentKey: 'seed',
        depth: -1,
        links: [...valid, ...sitemapUrls].map((url) => ({ url, nofollow: false })),
      },
    ],
    { frontier: createFrontierStore(stack.clients.dynamodb, table), seen: new LruSet(1), now: new Date() },
  );
  await tasks.sendTasks([
    ...admitted.tasks,
    ...invalid.map((url) => ({ task: { v: 1 as const, crawlId: config.crawlId, url, depth: 0 } })),
  ]);
  await results.sendResults(admitted.results);
  return {
    tasks: admitted.tasks.length + invalid.length,
    skipped: admitted.results.length,
    invalid: invalid.length,
  };
}
