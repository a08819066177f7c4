/**
 * Aggregate function: SQS batch of result records → finalize in the FrontierTable, gzip JSONL index
 * parts in the page store, crawl counters, completion and the crawl summary (core/aggregate-batch.ts).
 * Thin on purpose: parse the event, call the core, report batch item failures.
 *
 * Failed messages are made visible again soon instead of after the queue's visibility timeout
 * (6× the function timeout): a malformed message at once, so its maxReceiveCount receives pass in
 * seconds and it lands in the ResultsDLQ promptly; a result whose processing failed after a short
 * backoff. The queue URL comes from the record's eventSourceARN (GetQueueUrl, once per container).
 * Results the core did not start before the deadline (the remaining time less a reserve) are sent
 * again as new messages: running out of time spends no receive toward the ResultsDLQ.
 */
import { GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { createFrontierStore } from '../adapters/frontier-store.ts';
import { delayRedelivery } from '../adapters/queues.ts';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { sendMessagesInBatches } from '../adapters/sqs-batch-sender.ts';
import { processResultBatch } from '../core/aggregate-batch.ts';
import { backoffSeconds } from '../core/backoff.ts';
import { createAwsClients } from '../shared/aws-clients.ts';
import { AggregateEnvSchema, type Env, loadEnv } from '../shared/env.ts';
import { createLogger, logsAt } from '../shared/logger.ts';
import {
  CRAWLER_NAMESPACE,
  createMetrics,
  METRIC_DIMENSIONS,
  recordRedeliveredAges,
} from '../shared/metrics.ts';

/** Retries of a failed step wait a little (seconds), not the 6× timeout visibility. */
const RETRY_BACKOFF = { baseSeconds: 2, maxSeconds: 60 };

export function createHandler(rawEnv: Env) {
  const env = loadEnv(AggregateEnvSchema, rawEnv, 'aggregate function');
  const clients = createAwsClients(env);
  const blobs = new S3Blobs(clients.s3, env.PAGE_BUCKET, { singleAttempt: clients.singleAttempt.s3 });
  const frontier = createFrontierStore(clients.dynamodb, env.FRONTIER_TABLE, {
    singleAttemptClient: clients.singleAttempt.dynamodb,
  });
  const log = createLogger('aggregate', rawEnv.LOG_LEVEL);
  // EMF lines are log lines: a quiet local run (LOG_LEVEL=warn) keeps them out of the CLI's output.
  const metrics = createMetrics(
    CRAWLER_NAMESPACE,
    { [METRIC_DIMENSIONS.function]: 'aggregate' },
    logsAt(rawEnv.LOG_LEVEL, 'info') ? undefined : () => {},
  );
  const queueUrls = new Map<string, Promise<string>>();

  const queueUrlOf = (arn: string): Promise<string> => {
    let url = queueUrls.get(arn);
    if (!url) {
      url = resolveQueueUrl(clients.sqs, arn);
      url.catch(() => queueUrls.delete(arn));
      queueUrls.set(arn, url);
    }
    return url;
  };

  return async (
    event: SQSEvent,
    context?: Pick<Context, 'awsRequestId'> & Partial<Pick<Context, 'getRemainingTimeInMillis'>>,
  ): Promise<SQSBatchResponse> => {
    const byId = new Map(event.Records.map((record) => [record.messageId, record]));
    recordRedeliveredAges(metrics, event.Records, Date.now());
    metrics.flush();
    const remaining = context?.getRemainingTimeInMillis?.();
    const report = await processResultBatch(
      event.Records.map((record) => ({
        id: record.messageId,
        body: record.body,
        receiveCount: Number(record.attributes.ApproximateReceiveCount) || 1,
      })),
      {
        frontier,
        blobs,
        invocationId: context?.awsRequestId ?? crypto.randomUUID(),
        ...(remaining === undefined ? {} : { deadline: Date.now() + remaining - reserveMs(remaining) }),
      },
    );
    for (const part of report.written) log.info('index part written', part);
    for (const dup of report.duplicates) log.info('duplicate result dropped', dup);
    for (const again of report.rewritten) log.warn('result written again (repeat)', again);
    for (const late of report.late) log.warn('result for a URL a finished crawl never had dropped', late);
    for (const summary of report.summaries) log.info('crawl complete, summary written', summary);
    for (const bad of report.rejected)
      log.error('not a result record', { messageId: bad.id, reason: bad.reason });
    for (const retry of report.retry) log.warn('result will be retried', retry);

    // Not started for lack of time: sent again as new messages (a failure report would spend a
    // receive toward the DLQ); only if that send fails do they come back as failures, at once.
    const deferred = report.deferred.flatMap(({ id }) => byId.get(id) ?? []);
    const unsent = await handBack(clients.sqs, deferred, queueUrlOf).catch((error: unknown) => {
      log.warn('could not send back the results not started in time', { error: String(error) });
      return deferred;
    });
    if (deferred.length > 0) log.info('results not started in time sent back', { count: deferred.length });

    const redeliver = [
      ...unsent.map((record) => ({ id: record.messageId, seconds: 0 })),
      ...report.rejected.map((bad) => ({ id: bad.id, seconds: 0 })),
      ...report.retry.map((retry) => ({
        id: retry.id,
        seconds: backoffSeconds(receiveCount(byId.get(retry.id)), RETRY_BACKOFF),
      })),
    ];
    await hastenRedelivery(clients.sqs, redeliver, byId, queueUrlOf).catch((error: unknown) =>
      log.warn('could not change the visibility of failed messages', { error: String(error) }),
    );
    return { batchItemFailures: redeliver.map((entry) => ({ itemIdentifier: entry.id })) };
  };
}

/**
 * Time kept after the last crawl's results start: its steps (finalize with retries, the part PUT,
 * counters, completion) and the hand-back of the rest. 20 s, or a third of a short timeout, but at
 * least 1 s: with less than that left nothing is started.
 */
const RESERVE_MS = 20_000;
const RESERVE_SHARE = 1 / 3;
const MIN_RESERVE_MS = 1_000;

function reserveMs(remaining: number): number {
  return Math.min(RESERVE_MS, Math.max(MIN_RESERVE_MS, remaining * RESERVE_SHARE));
}

/** Sends `records` again, as they are, to the queues they came from; returns none (it throws instead). */
async function handBack(
  sqs: SQSClient,
  records: readonly SQSRecord[],
  queueUrlOf: (arn: string) => Promise<string>,
): Promise<SQSRecord[]> {
  for (const [arn, group] of Map.groupBy(records, (record) => record.eventSourceARN)) {
    const queueUrl = await queueUrlOf(arn);
    await sendMessagesInBatches(
      sqs,
      queueUrl,
      group.map((record) => ({ body: record.body })),
    );
  }
  return [];
}

function receiveCount(record: SQSRecord | undefined): number {
  return Number(record?.attributes.ApproximateReceiveCount) || 1;
}

async function hastenRedelivery(
  sqs: SQSClient,
  entries: ReadonlyArray<{ id: string; seconds: number }>,
  byId: Map<string, SQSRecord>,
  queueUrlOf: (arn: string) => Promise<string>,
): Promise<void> {
  const byQueue = Map.groupBy(
    entries.flatMap((entry) => {
      const record = byId.get(entry.id);
      return record ? [{ record, seconds: entry.seconds }] : [];
    }),
    (entry) => entry.record.eventSourceARN,
  );
  for (const [arn, group] of byQueue) {
    const queueUrl = await queueUrlOf(arn);
    await delayRedelivery(
      sqs,
      queueUrl,
      group.map(({ record, seconds }) => ({ receiptHandle: record.receiptHandle, seconds })),
    );
  }
}

/** `arn:aws:sqs:<region>:<account>:<name>` → the queue's URL, as SQS itself spells it. */
async function resolveQueueUrl(sqs: SQSClient, arn: string): Promise<string> {
  const [, , service, , account, name] = arn.split(':');
  if (service !== 'sqs' || !account || !name) throw new Error(`not an SQS queue ARN: ${arn}`);
  const out = await sqs.send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account }));
  if (!out.QueueUrl) throw new Error(`GetQueueUrl gave no URL for ${arn}`);
  return out.QueueUrl;
}

let lambdaHandler: ReturnType<typeof createHandler> | undefined;

/** The Lambda entry point: one handler instance per warm container, built on first use. */
export const handler = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  lambdaHandler ??= createHandler(process.env);
  return lambdaHandler(event, context);
};
