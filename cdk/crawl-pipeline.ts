/**
 * The crawl's two stages, each a function and the queue it consumes (TaskQueue -> fetch function,
 * ResultsQueue -> aggregate function), and how they are wired to each other and to the stores. Apart
 * from the stack so that it reads as steps; the resources every later step uses are described here
 * (CrawlerResources).
 */
import { Duration, type Stack } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { credentialsPrefix, FUNCTION_ENV, HANDLERS, IDS } from '../lambdas/shared/contracts.ts';
import { CrawlerFunction } from './crawler-function.ts';
import type { FrontierTable } from './frontier-table.ts';
import { AGGREGATE_EVENT_SOURCE, AGGREGATE_FUNCTION, FETCH_EVENT_SOURCE, FETCH_FUNCTION } from './limits.ts';
import { pinLogicalId } from './logical-id.ts';
import type { PageStore } from './page-store.ts';
import { QueueWithDlq } from './queue-with-dlq.ts';

export interface PipelineFunctions {
  readonly fetchFunction: CrawlerFunction;
  readonly aggregateFunction: CrawlerFunction;
}

export interface PipelineQueues {
  readonly taskQueue: QueueWithDlq;
  readonly resultsQueue: QueueWithDlq;
}

/** What the functions use: the pipeline, the stores, the event bus and the credentials' parameters. */
export interface CrawlerResources extends PipelineFunctions, PipelineQueues {
  readonly pageStore: PageStore;
  readonly frontierTable: FrontierTable;
  readonly eventBus: events.IEventBus;
  readonly eventBusName: string;
  /** The ARN pattern of the crawls' credential parameters (SSM). */
  readonly credentialParameters: string;
}

export function createPipelineFunctions(scope: Construct): PipelineFunctions {
  const fetchFunction = new CrawlerFunction(scope, IDS.fetchFunction, {
    handlerModule: HANDLERS.fetch,
    description: 'Fetches crawl tasks from TaskQueue, stores WARC records, enqueues results and new links',
    timeoutSeconds: FETCH_FUNCTION.timeoutSeconds,
    memoryMb: FETCH_FUNCTION.memoryMb,
    // The fetch function sends discovered links to the queue it consumes. Lambda's recursive loop
    // detection would otherwise stop that SQS -> Lambda -> SQS chain after ~16 hops, i.e. cut every
    // crawl at about depth 16. Runaway crawls are bounded by maxDepth / maxPages and the frontier dedup.
    recursiveLoop: lambda.RecursiveLoop.ALLOW,
  });
  const aggregateFunction = new CrawlerFunction(scope, IDS.aggregateFunction, {
    handlerModule: HANDLERS.aggregate,
    description: 'Batches crawl results into index parts in S3 and keeps crawl counters',
    timeoutSeconds: AGGREGATE_FUNCTION.timeoutSeconds,
    memoryMb: AGGREGATE_FUNCTION.memoryMb,
    // It re-sends to ResultsQueue only the results it could not start before its deadline. One result
    // sent round that loop ~16 times in a row is stuck, not slow: Lambda stops it, and the message
    // ends in ResultsDLQ (alarmed), where redrive can move it after a fix.
    recursiveLoop: lambda.RecursiveLoop.TERMINATE,
  });
  pinLogicalId(fetchFunction);
  pinLogicalId(aggregateFunction);
  return { fetchFunction, aggregateFunction };
}

/** Visibility timeouts derive from the consumer's timeout and batching window. */
export function createPipelineQueues(scope: Construct, functions: PipelineFunctions): PipelineQueues {
  const taskQueue = new QueueWithDlq(scope, IDS.taskQueue, {
    dlqId: IDS.taskDlq,
    consumerTimeout: functions.fetchFunction.functionTimeout,
    consumerMaxBatchingWindow: Duration.seconds(FETCH_EVENT_SOURCE.maxBatchingWindowSeconds),
  });
  const resultsQueue = new QueueWithDlq(scope, IDS.resultsQueue, {
    dlqId: IDS.resultsDlq,
    consumerTimeout: functions.aggregateFunction.functionTimeout,
    consumerMaxBatchingWindow: Duration.seconds(AGGREGATE_EVENT_SOURCE.maxBatchingWindowSeconds),
  });
  for (const construct of [taskQueue, taskQueue.dlq, resultsQueue, resultsQueue.dlq]) pinLogicalId(construct);
  return { taskQueue, resultsQueue };
}

/**
 * A crawl's credentials (--header, --cookie, --basic-auth): the submitter writes them to an SSM
 * SecureString parameter under the stack's prefix, the fetch function reads them. The AWS managed
 * key aws/ssm lets the account's principals decrypt through SSM: no KMS grant to write.
 */
export function credentialParametersArn(stack: Stack): string {
  return stack.formatArn({
    service: 'ssm',
    resource: 'parameter',
    resourceName: `${credentialsPrefix(stack.stackName).slice(1)}*`,
  });
}

/** Each function's environment (where its queues, stores and bus are), and the event sources. */
export function wirePipeline(crawler: CrawlerResources, fetchConcurrency: number): void {
  const { fetchFunction, aggregateFunction, taskQueue, resultsQueue, pageStore, frontierTable } = crawler;
  fetchFunction.addEnvironment(FUNCTION_ENV.taskQueueUrl, taskQueue.queueUrl);
  fetchFunction.addEnvironment(FUNCTION_ENV.taskDlqUrl, taskQueue.dlq.queueUrl);
  fetchFunction.addEnvironment(FUNCTION_ENV.resultsQueueUrl, resultsQueue.queueUrl);
  fetchFunction.addEnvironment(FUNCTION_ENV.pageBucket, pageStore.bucketName);
  fetchFunction.addEnvironment(FUNCTION_ENV.frontierTable, frontierTable.tableName);
  aggregateFunction.addEnvironment(FUNCTION_ENV.resultsQueueUrl, resultsQueue.queueUrl);
  aggregateFunction.addEnvironment(FUNCTION_ENV.taskQueueUrl, taskQueue.queueUrl);
  aggregateFunction.addEnvironment(FUNCTION_ENV.pageBucket, pageStore.bucketName);
  aggregateFunction.addEnvironment(FUNCTION_ENV.frontierTable, frontierTable.tableName);
  fetchFunction.addEnvironment(FUNCTION_ENV.eventBusName, crawler.eventBusName);
  aggregateFunction.addEnvironment(FUNCTION_ENV.eventBusName, crawler.eventBusName);

  // The event source mappings grant what Lambda's polling needs (crawler-function.ts).
  fetchFunction.consumeFrom(taskQueue, { ...FETCH_EVENT_SOURCE, maxConcurrency: fetchConcurrency });
  aggregateFunction.consumeFrom(resultsQueue, AGGREGATE_EVENT_SOURCE);
}
