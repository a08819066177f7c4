/**
 * Exactly the calls each handler makes (no CDK grant*: those add actions no call uses), one function
 * per handler; test/integration/iam-calls.test.ts records every call and checks both ways. Apart from
 * the stack so that each function's whole access reads in one place.
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import type { CrawlerResources } from './crawl-pipeline.ts';
import type { CrawlerFunction } from './crawler-function.ts';
import type { QueueWithDlq } from './queue-with-dlq.ts';

export function allow(fn: CrawlerFunction, actions: string[], resources: string[]): void {
  fn.addToRolePolicy(new iam.PolicyStatement({ actions, resources }));
}

export function grantFetchAccess(crawler: CrawlerResources): void {
  const { fetchFunction, taskQueue, resultsQueue, pageStore, frontierTable } = crawler;
  // New links and woken or handed-back hosts to TaskQueue, results to ResultsQueue, and a malformed
  // task to TaskDLQ at once, with its reason (SendMessage only: it never reads or purges a DLQ).
  allow(
    fetchFunction,
    ['sqs:SendMessage'],
    [taskQueue.queueArn, resultsQueue.queueArn, taskQueue.dlq.queueArn],
  );
  allow(fetchFunction, ['sqs:ChangeMessageVisibility'], [taskQueue.queueArn]); // a retried task's backoff
  allow(fetchFunction, ['s3:GetObject', 's3:PutObject'], [pageStore.arnForObjects('*')]); // WARC and content files; index parts it checks
  // A HEAD of an index part not yet written must answer 404, not 403 (S3 does only with ListBucket).
  allow(fetchFunction, ['s3:ListBucket'], [pageStore.bucketArn]);
  allow(
    fetchFunction,
    [
      'dynamodb:GetItem',
      'dynamodb:BatchGetItem',
      'dynamodb:Query',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
    ],
    [frontierTable.tableArn],
  );
  // Crawl Cancelled when a crawl's --max-cost-usd is spent.
  allow(fetchFunction, ['events:PutEvents'], [crawler.eventBus.eventBusArn]);
  // The crawl's credentials (crawl-pipeline.ts credentialParametersArn).
  allow(fetchFunction, ['ssm:GetParameter'], [crawler.credentialParameters]);
}

export function grantAggregateAccess(crawler: CrawlerResources): void {
  const { aggregateFunction, taskQueue, resultsQueue, pageStore, frontierTable } = crawler;
  // A malformed or retried result is made visible again soon (ChangeMessageVisibility); SQS itself
  // parks it in ResultsDLQ after maxReceiveCount. Results it had no time to start go back to the
  // queue as new messages (SendMessage).
  allow(aggregateFunction, ['sqs:ChangeMessageVisibility', 'sqs:SendMessage'], [resultsQueue.queueArn]);
  // A visit of a host that awaits results at the crawl's end, due at once (core/frontier/host-hurry.ts).
  allow(aggregateFunction, ['sqs:SendMessage'], [taskQueue.queueArn]);
  allow(aggregateFunction, ['s3:GetObject', 's3:PutObject'], [pageStore.arnForObjects('*')]); // index parts, summaries
  allow(aggregateFunction, ['s3:ListBucket'], [pageStore.bucketArn]); // listing parts; 404 on a missing one
  allow(
    aggregateFunction,
    ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    [frontierTable.tableArn],
  );
  // The crawl's end and page events.
  allow(aggregateFunction, ['events:PutEvents'], [crawler.eventBus.eventBusArn]);
}

/** The render function's calls, and the fetch function's sends of pages to render. */
export function grantRenderAccess(crawler: CrawlerResources, fn: CrawlerFunction, queue: QueueWithDlq): void {
  const { taskQueue, resultsQueue, pageStore, frontierTable } = crawler;
  allow(crawler.fetchFunction, ['sqs:SendMessage'], [queue.queueArn]);
  // Visits of woken and hurried hosts, results, and a malformed message to RenderDLQ at once.
  allow(fn, ['sqs:SendMessage'], [taskQueue.queueArn, resultsQueue.queueArn, queue.dlq.queueArn]);
  allow(fn, ['sqs:ChangeMessageVisibility'], [queue.queueArn]); // a retried page's backoff
  allow(fn, ['s3:GetObject', 's3:PutObject'], [pageStore.arnForObjects('*')]); // the response read back; WARC and content files
  allow(
    fn,
    // Query: the stored scope of a crawl of seeds from a file, read with its config.
    ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    [frontierTable.tableArn],
  );
  allow(fn, ['events:PutEvents'], [crawler.eventBus.eventBusArn]);
  allow(fn, ['ssm:GetParameter'], [crawler.credentialParameters]);
}
