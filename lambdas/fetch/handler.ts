/**
 * Fetch function: SQS batch of crawl tasks → core → results, WARC, new and deferred tasks.
 * Thin on purpose: parse the event, call the core, report batch item failures.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoCrawlBudget } from '../adapters/crawl-budget.ts';
import { CrawlConfigStore } from '../adapters/crawl-config-store.ts';
import { CrawlCancellation } from '../adapters/frontier-cancel.ts';
import { createFrontierStore } from '../adapters/frontier-store.ts';
import { HttpFetcher, type HttpFetcherOptions } from '../adapters/http-fetcher.ts';
import { delayRedelivery, SqsDeadLetterSender, SqsResultSender, SqsTaskSender } from '../adapters/queues.ts';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { processFetchBatch } from '../core/fetch-batch.ts';
import { LruSet } from '../core/lru.ts';
import type { PageFetcher } from '../core/ports.ts';
import { createRobotsCache } from '../core/robots-gate.ts';
import { createAwsClients } from '../shared/aws-clients.ts';
import { type Env, type FetchEnv, FetchEnvSchema, loadEnv } from '../shared/env.ts';
import { createLogger, logsAt } from '../shared/logger.ts';
import {
  CRAWLER_METRICS,
  CRAWLER_NAMESPACE,
  createMetrics,
  recordRedeliveredAges,
} from '../shared/metrics.ts';

/** Links this container has seen (per crawl): bounded so a long-lived container stays small. */
const SEEN_CACHE_ENTRIES = 100_000;
const ROBOTS_CACHE_ENTRIES = 1_000;
/** Index parts this container has seen written. */
const WRITTEN_PARTS_CACHE_ENTRIES = 10_000;

/** What a test may put in place of the real thing (a synthetic web instead of sockets). */
export interface HandlerOverrides {
  fetcher?: PageFetcher;
}

/**
 * Inside Lambda `--allow-private` opens private ranges but never this machine's own addresses: the
 * Runtime API listens on loopback and the metadata service is link-local.
 */
export function fetcherOptions(env: Pick<FetchEnv, 'AWS_LAMBDA_RUNTIME_API'>): HttpFetcherOptions {
  return { connectionsPerOrigin: 6, refuseHostLocal: env.AWS_LAMBDA_RUNTIME_API !== undefined };
}

export function createHandler(rawEnv: Env, overrides: HandlerOverrides = {}) {
  const env = loadEnv(FetchEnvSchema, rawEnv, 'fetch function');
  const clients = createAwsClients(env);
  const log = createLogger('fetch', rawEnv.LOG_LEVEL);
  // EMF lines are log lines: a quiet local run (LOG_LEVEL=warn) keeps them out of the CLI's output.
  const metrics = createMetrics(
    CRAWLER_NAMESPACE,
    { Function: 'fetch' },
    logsAt(rawEnv.LOG_LEVEL, 'info') ? undefined : () => {},
  );
  const frontier = createFrontierStore(clients.dynamodb, env.FRONTIER_TABLE, {
    singleAttemptClient: clients.singleAttempt.dynamodb,
  });
  const configs = new CrawlConfigStore(clients.dynamodb, env.FRONTIER_TABLE, env.DEFAULT_CRAWL_CONFIG);
  // Several connections per origin: a request waiting behind another on one socket would leave late.
  const fetcher = overrides.fetcher ?? new HttpFetcher(fetcherOptions(env));
  const blobs = new S3Blobs(clients.s3, env.PAGE_BUCKET);
  const writtenParts = new LruSet(WRITTEN_PARTS_CACHE_ENTRIES);
  const deps = {
    fetcher,
    ...(fetcher instanceof HttpFetcher ? { bodyBudget: fetcher.bodyBudget } : {}),
    configs,
    frontier,
    hosts: frontier,
    robots: frontier.robots,
    // One cached read per crawl per few seconds; a failed read counts as not cancelled (fail open).
    crawlStates: new CrawlCancellation(clients.dynamodb, env.FRONTIER_TABLE, {
      onError: (crawlId, error) => log.warn('cancel check failed', { crawlId, error: String(error) }),
    }),
    robotsCache: createRobotsCache(ROBOTS_CACHE_ENTRIES),
    seen: new LruSet(SEEN_CACHE_ENTRIES),
    blobs,
    // A part once written is never removed: a HEAD that found it need not be repeated.
    partExists: async (key: string) => {
      if (writtenParts.has(key)) return true;
      const exists = await blobs.exists(key);
      if (exists) writtenParts.add(key);
      return exists;
    },
    results: new SqsResultSender(clients.sqs, env.RESULTS_QUEUE_URL),
    tasks: new SqsTaskSender(clients.sqs, env.TASK_QUEUE_URL),
    deadLetters: new SqsDeadLetterSender(clients.sqs, env.TASK_DLQ_URL),
    budget: new DynamoCrawlBudget(clients.dynamodb, env.FRONTIER_TABLE, configs),
    now: () => Date.now(),
    sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  };

  return async (
    event: SQSEvent,
    context?: Pick<Context, 'awsRequestId'> & Partial<Pick<Context, 'getRemainingTimeInMillis'>>,
  ): Promise<SQSBatchResponse> => {
    const receiptHandles = new Map(event.Records.map((record) => [record.messageId, record.receiptHandle]));
    // Visits stop starting requests this long before the function's timeout: the sends follow.
    const remaining = context?.getRemainingTimeInMillis?.() ?? DEFAULT_BUDGET_MS;
    const report = await processFetchBatch(
      event.Records.map((record) => ({
        id: record.messageId,
        body: record.body,
        receiveCount: Number(record.attributes.ApproximateReceiveCount) || 1,
      })),
      {
        ...deps,
        invocationId: context?.awsRequestId ?? crypto.randomUUID(),
        deadline: Date.now() + remaining - Math.min(SEND_RESERVE_MS, remaining * SEND_RESERVE_SHARE),
        end: Date.now() + remaining,
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
    for (const result of report.results) {
      metrics.count(CRAWLER_METRICS.pages, 1, { Outcome: result.outcome });
      if (result.bytes > 0) metrics.count(CRAWLER_METRICS.bytes, result.bytes, undefined, 'Bytes');
      if (result.status !== undefined) metrics.timing(CRAWLER_METRICS.fetchLatency, result.ms);
    }
    if (report.retries.length > 0) metrics.count(CRAWLER_METRICS.retries, report.retries.length);
    recordRedeliveredAges(metrics, event.Records, Date.now());
    metrics.flush();
    for (const retry of report.retries)
      log.info('retry', { messageId: retry.id, code: retry.code, inSeconds: retry.delaySeconds });
    for (const { url, why } of report.dropped) log.warn('task of a complete crawl dropped', { url, why });
    for (const outcome of report.outcomes) log.debug('visit', { ...outcome });
    // If this fails the retries come back after the queue's visibility timeout instead: later, not lost.
    await delayRedelivery(
      clients.sqs,
      env.TASK_QUEUE_URL,
      report.retries.map((retry) => ({
        receiptHandle: receiptHandles.get(retry.id)!,
        seconds: retry.delaySeconds,
      })),
    ).catch((error: unknown) =>
      log.warn('could not change the visibility of retried tasks', { error: String(error) }),
    );
    return { batchItemFailures: report.retries.map((retry) => ({ itemIdentifier: retry.id })) };
  };
}

/** Time kept for the batch's last sends after the visits stop starting requests: 10 s, or a quarter of a short timeout. */
const SEND_RESERVE_MS = 10_000;
const SEND_RESERVE_SHARE = 0.25;
/** Without a Lambda context (tests), the batch's time budget. */
const DEFAULT_BUDGET_MS = 60_000;

let lambdaHandler: ReturnType<typeof createHandler> | undefined;

/** The Lambda entry point: one handler instance per warm container, built on first use. */
export const handler = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  lambdaHandler ??= createHandler(process.env);
  return lambdaHandler(event, context);
};
