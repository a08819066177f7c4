/**
 * Fetch function: SQS batch of crawl tasks → core → results, WARC, new and deferred tasks.
 * Thin on purpose: parse the event, call the core (its adapters are wired in fetch-deps.ts), report.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { SqsRedelivery } from '../adapters/sqs-redelivery.ts';
import { processFetchBatch } from '../core/batches/index.ts';
import { createAwsClients } from '../shared/aws-clients.ts';
import { type Env, FetchEnvSchema, loadEnv } from '../shared/env.ts';
import { CRAWLER_METRICS, METRIC_DIMENSIONS } from '../shared/metrics.ts';
import {
  failedItems,
  handlerTelemetry,
  type InvocationContext,
  invocationOf,
  receivedMessages,
} from '../shared/sqs-batch-handler.ts';
import { functionStack } from '../submission/function-stack.ts';
import { startCrawlsFromQueue } from '../submission/queue-starts.ts';
import { fetchDeps, type HandlerOverrides } from './fetch-deps.ts';

export function createHandler(rawEnv: Env, overrides: HandlerOverrides = {}) {
  const env = loadEnv(FetchEnvSchema, rawEnv, 'fetch function');
  const clients = createAwsClients(env, overrides);
  const { log, metrics } = handlerTelemetry('fetch', rawEnv.LOG_LEVEL);
  const redelivery = new SqsRedelivery(clients.sqs, env.TASK_QUEUE_URL);
  const deps = fetchDeps(env, clients, log, overrides);
  const stack = functionStack(env, clients);

  return async (event: SQSEvent, context?: InvocationContext): Promise<SQSBatchResponse> => {
    // Schedules' firings and re-crawl tasks start their crawls first (lambdas/submission/).
    const starts = await startCrawlsFromQueue(receivedMessages(event, metrics), {
      stack,
      deadLetters: deps.deadLetters,
      log,
      now: () => new Date(),
    });
    const messages = starts.rest;
    // Visits stop starting requests this long before the function's timeout: the sends follow.
    const { invocationId, remainingMs } = invocationOf(context, DEFAULT_BUDGET_MS);
    const reserve = Math.min(SEND_RESERVE_MS, remainingMs * SEND_RESERVE_SHARE);
    const fixedEnd = Date.now() + remainingMs;
    // Read at each check, from the context: on Lambda it never moves; a local runtime winding down
    // (Ctrl-C) answers 0 remaining, and the visits stop at their next page as at a timeout.
    const end = () =>
      context?.getRemainingTimeInMillis ? Date.now() + context.getRemainingTimeInMillis() : fixedEnd;
    const report = await processFetchBatch(messages, {
      ...deps,
      invocationId,
      get deadline() {
        return end() - reserve;
      },
      get end() {
        return end();
      },
    });
    for (const { crawlId, url, outcome, code, status, bytes, ms, skipped } of report.results) {
      log.info('result', { crawlId, url, outcome, code, status });
      metrics.count(CRAWLER_METRICS.pages, 1, { [METRIC_DIMENSIONS.outcome]: outcome });
      // The skipped links a page carries are results too (docs/frontier.md, "Skipped links").
      if (skipped?.length)
        metrics.count(CRAWLER_METRICS.pages, skipped.length, { [METRIC_DIMENSIONS.outcome]: 'skipped' });
      if (bytes > 0) metrics.count(CRAWLER_METRICS.bytes, bytes, undefined, 'Bytes');
      if (status !== undefined) metrics.timing(CRAWLER_METRICS.fetchLatency, ms);
    }
    if (report.retries.length > 0) metrics.count(CRAWLER_METRICS.retries, report.retries.length);
    metrics.flush();
    for (const retry of report.retries)
      log.info('retry', { messageId: retry.id, code: retry.code, inSeconds: retry.delaySeconds });
    for (const { url, why } of report.dropped) log.warn('task of a complete crawl dropped', { url, why });
    for (const outcome of report.outcomes) log.debug('visit', { ...outcome });
    return failedItems(
      event,
      [...starts.failed, ...report.retries.map((retry) => ({ id: retry.id, seconds: retry.delaySeconds }))],
      redelivery,
      log,
    );
  };
}

/** Time kept for the batch's last sends after the visits stop starting requests: 10 s, or a quarter of a short timeout. */
export const SEND_RESERVE_MS = 10_000;
const SEND_RESERVE_SHARE = 0.25;
/** Without a Lambda context (tests), the batch's time budget. */
const DEFAULT_BUDGET_MS = 60_000;

let lambdaHandler: ReturnType<typeof createHandler> | undefined;

/** The Lambda entry point: one handler instance per warm container, built on first use. */
export const handler = (event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse> => {
  lambdaHandler ??= createHandler(process.env);
  return lambdaHandler(event, context);
};
