/**
 * Taking over a state dir from a killed process (its lock was stale): nothing of its own is on its
 * way any more except what it left in the queues. A wake's claim it made
 * just before it died, its visit message never sent, would hold that host until a later wake, and a
 * crawl whose last URLs are on that host gets none: it stays running with URLs pending and no visit
 * coming (docs/frontier.md, "Taking over a crawl"). So every crawl not complete is swept once here,
 * when this process starts serving the state: each active host with no live lease and no visit
 * claimed or due since the takeover gets a new ticket and its visit message (the claims of this
 * process's own submissions are newer, and keep theirs). A message the dead process did send becomes
 * stale and is dropped.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { listCrawls } from '../lambdas/adapters/frontier-crawls.ts';
import { FrontierHosts } from '../lambdas/adapters/frontier-hosts.ts';
import { resolveOptions } from '../lambdas/adapters/frontier-schema.ts';
import { SqsTaskSender } from '../lambdas/adapters/queues.ts';
import type { OutgoingVisit } from '../lambdas/core/crawl/index.ts';
import { confirmSent, visitOf } from '../lambdas/core/frontier/index.ts';
import { OUTPUTS } from '../lambdas/shared/contracts.ts';

export async function sweepStrandedHosts(
  clients: { dynamodb: DynamoDBClient; sqs: SQSClient },
  outputs: Readonly<Record<string, string | undefined>>,
  takenOverAt: number,
): Promise<number> {
  const table = outputs[OUTPUTS.frontierTableName];
  const taskQueueUrl = outputs[OUTPUTS.taskQueueUrl];
  if (table === undefined || taskQueueUrl === undefined) return 0; // not the crawler's stack
  const hosts = new FrontierHosts(clients.dynamodb, table, resolveOptions());
  const visits: OutgoingVisit[] = [];
  for await (const { crawlId, counters } of listCrawls(clients.dynamodb, table)) {
    if (counters.state === 'complete') continue;
    for (const { host, ticket } of await hosts.sweep(crawlId, Date.now(), takenOverAt))
      visits.push({ visit: visitOf(crawlId, host, ticket) });
  }
  await new SqsTaskSender(clients.sqs, taskQueueUrl).sendVisits(visits);
  await confirmSent(visits, hosts);
  return visits.length;
}
