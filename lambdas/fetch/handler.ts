/**
 * Fetch function: SQS batch of crawl tasks → core → results, WARC, follow-up tasks.
 * Thin on purpose: parse the event, call the core, report batch item failures.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { CrawlConfigStore } from '../adapters/crawl-config-store.ts';
import { HttpFetcher } from '../adapters/http-fetcher.ts';
import { delayRedelivery, SqsResultSender, SqsTaskSender } from '../adapters/queues.ts';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { processFetchBatch } from '../core/fetch-batch.ts';
import { createAwsClients } from '../shared/aws-clients.ts';
import { type Env, FetchEnvSchema, loadEnv } from '../shared/env.ts';
import { createLogger } from '../shared/logger.ts';

export function createHandler(rawEnv: Env) {
  const env = loadEnv(FetchEnvSchema, rawEnv, 'fetch function');
  const clients = createAwsClients(env);
  const log = createLogger('fetch', rawEnv.LOG_LEVEL);
  const fetcher = new HttpFetcher();
  const configs = new CrawlConfigStore(clients.dynamodb, env.FRONTIER_TABLE, env.DEFAULT_CRAWL_CONFIG);
  const blobs = new S3Blobs(clients.s3, env.PAGE_BUCKET);
  const results = new SqsResultSender(clients.sqs, env.RESULTS_QUEUE_URL);
  const tasks = new SqsTaskSender(clients.sqs, env.TASK_QUEUE_URL);

  return async (event: SQSEvent, context?: Pick<Context, 'awsRequestId'>): Promise<SQSBatchResponse> => {
    const byId = new Map(event.Records.map((record) => [record.messageId, record]));
    const report = await processFetchBatch(
      event.Records.map((record) => ({
        id: record.messageId,
        body: record.body,
        receiveCount: Number(record.attributes.ApproximateReceiveCount) || 1,
      })),
      {
        fetcher,
        configs,
        blobs,
        results,
        tasks,
        invocationId: context?.awsRequestId ?? crypto.randomUUID(),
      },
    );
    for (const result of report.results) {
      log.info('result', {
        crawlId: result.crawlId,
        url: result.url,
        outcome: result.outcome,
        code: result.code,
        status: result.status,
      });
    }
    for (const retry of report.retries)
      log.info('retry', { messageId: retry.id, code: retry.code, inSeconds: retry.delaySeconds });
    await delayRedelivery(
      clients.sqs,
      env.TASK_QUEUE_URL,
      report.retries.map((retry) => ({
        receiptHandle: byId.get(retry.id)!.receiptHandle,
        seconds: retry.delaySeconds,
      })),
    );
    return { batchItemFailures: report.retries.map((retry) => ({ itemIdentifier: retry.id })) };
  };
}

let lambdaHandler: ReturnType<typeof createHandler> | undefined;

/** The Lambda entry point: one handler instance per warm container, built on first use. */
export const handler = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  lambdaHandler ??= createHandler(process.env);
  return lambdaHandler(event, context);
};
