/**
 * The progress display's source for a crawl run by this process: counts and waits from the
 * FrontierTable (lambdas/adapters/crawl-progress-reader.ts), retries from the local runtime.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { CrawlProgressReader } from '../lambdas/adapters/crawl-progress-reader.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';
import { requiredOutput } from '../lambdas/shared/required-output.ts';
import type { RuntimeStats } from '../local/local-aws.ts';
import type { ProgressSource } from './crawl-progress.ts';

export function localProgressSource(
  local: {
    clientConfig: { dynamodb: DynamoDBClientConfig };
    outputs: Record<string, string>;
    stats(): RuntimeStats;
  },
  crawlId: string,
): ProgressSource {
  // A client of its own, not `local.clients`: those count every call into the crawl's cost report
  // (and its AWS requests per page), and watching the crawl is no part of its cost.
  const dynamodb = new DynamoDBClient(local.clientConfig.dynamodb);
  const reader = new CrawlProgressReader(dynamodb, requiredOutput(local.outputs, OUTPUTS.frontierTableName));
  return {
    async read() {
      const counters = await reader.counters(crawlId);
      const { itemFailures, batchFailures } = local.stats().total;
      return {
        done: counters.done,
        queued: counters.queued,
        byOutcome: counters.byOutcome,
        retries: itemFailures + batchFailures,
        state: counters.state,
      };
    },
    async waits() {
      const [hosts, robots] = await Promise.all([reader.hosts(crawlId), reader.robots(crawlId)]);
      return { hosts, robots };
    },
    close: () => dynamodb.destroy(),
  };
}
