/**
 * Aggregate function: SQS batch of result records → finalize in the FrontierTable, gzip JSONL index
 * parts in the page store, crawl counters, completion and the crawl summary (core/batches/aggregate-batch.ts).
 * Thin on purpose: parse the event, call the core, report.
 *
 * A malformed message is made visible again at once, so its maxReceiveCount receives pass in seconds
 * and it lands in the ResultsDLQ promptly; a result whose processing failed, after its back-off.
 * Results the core did not start before the deadline (the remaining time less a reserve) are sent
 * again as new messages: running out of time spends no receive toward the ResultsDLQ.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { CrawlConfigStore } from '../adapters/crawl-config-store.ts';
import { EventBridgePublisher } from '../adapters/eventbridge-publisher.ts';
import { createFrontierStore } from '../adapters/frontier-store.ts';
import { SqsTaskSender } from '../adapters/queues.ts';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { SqsRedelivery } from '../adapters/sqs-redelivery.ts';
import { backoffSeconds, RETRY_BACKOFF } from '../core/base/index.ts';
import { processResultBatch } from '../core/batches/index.ts';
import { createAwsClients, type HandlerWiring } from '../shared/aws-clients.ts';
import { FUNCTION_ENV } from '../shared/contracts.ts';
import { AggregateEnvSchema, type Env, loadEnv } from '../shared/env.ts';
import {
  failedItems,
  handlerTelemetry,
  type InvocationContext,
  invocationOf,
  logEach,
  receivedMessages,
} from '../shared/sqs-batch-handler.ts';

export function createHandler(rawEnv: Env, wiring: HandlerWiring = {}) {
  const env = loadEnv(AggregateEnvSchema, rawEnv, 'aggregate function');
  const clients = createAwsClients(env, wiring);
  const blobs = new S3Blobs(clients.s3, env.PAGE_BUCKET, { singleAttempt: clients.singleAttempt.s3 });
  const frontier = createFrontierStore(clients.dynamodb, env.FRONTIER_TABLE, {
    singleAttemptClient: clients.singleAttempt.dynamodb,
  });
  const redelivery = new SqsRedelivery(clients.sqs, env.RESULTS_QUEUE_URL);
  const hurry = { hosts: frontier, tasks: new SqsTaskSender(clients.sqs, env.TASK_QUEUE_URL) };
  const bus = env[FUNCTION_ENV.eventBusName];
  const events =
    bus === undefined
      ? undefined
      : {
          publisher: new EventBridgePublisher(clients.eventbridge, bus),
          configs: new CrawlConfigStore(clients.dynamodb, env.FRONTIER_TABLE),
        };
  const { log, metrics } = handlerTelemetry('aggregate', rawEnv.LOG_LEVEL);

  return async (event: SQSEvent, context?: InvocationContext): Promise<SQSBatchResponse> => {
    const messages = receivedMessages(event, metrics);
    const { invocationId, remainingMs } = invocationOf(context, Number.POSITIVE_INFINITY);
    const report = await processResultBatch(messages, {
      frontier,
      blobs,
      hurry,
      ...(events === undefined ? {} : { events }),
      invocationId,
      ...(Number.isFinite(remainingMs)
        ? { deadline: Date.now() + remainingMs - reserveMs(remainingMs) }
        : {}),
    });
    logEach(log, 'info', 'index part written', report.written);
    logEach(log, 'info', 'duplicate result dropped', report.duplicates);
    logEach(log, 'warn', 'result written again (repeat)', report.rewritten);
    logEach(log, 'warn', 'result for a URL a finished crawl never had dropped', report.late);
    logEach(log, 'info', 'crawl complete, summary written', report.summaries);
    logEach(log, 'debug', 'hosts awaiting these results visited now', report.hurried);
    logEach(log, 'error', 'not a result record', report.rejected);
    logEach(log, 'warn', 'result will be retried', report.retry);

    const byId = new Map(messages.map((message) => [message.id, message]));
    // Not started for lack of time: sent again as new messages; only if that send fails do they come
    // back as failures, at once.
    const deferred = report.deferred.flatMap(({ id }) => byId.get(id) ?? []);
    const unsent = await redelivery.resend(deferred.map((message) => message.body)).then(
      () => [],
      (error: unknown) => {
        log.warn('could not send back the results not started in time', { error: String(error) });
        return deferred;
      },
    );
    if (deferred.length > 0) log.info('results not started in time sent back', { count: deferred.length });

    return failedItems(
      event,
      [
        ...unsent.map(({ id }) => ({ id, seconds: 0 })),
        ...report.rejected.map(({ id }) => ({ id, seconds: 0 })),
        ...report.retry.map(({ id }) => ({
          id,
          seconds: backoffSeconds(byId.get(id)?.receiveCount ?? 1, RETRY_BACKOFF.failedMessage),
        })),
      ],
      redelivery,
      log,
    );
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

let lambdaHandler: ReturnType<typeof createHandler> | undefined;

/** The Lambda entry point: one handler instance per warm container, built on first use. */
export const handler = (event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse> => {
  lambdaHandler ??= createHandler(process.env);
  return lambdaHandler(event, context);
};
