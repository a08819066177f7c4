/**
 * Render function: SQS batch of pages to render → core (render-batch.ts) → WARC conversion records,
 * content records, links admitted, results. Thin on purpose: parse the event, call the core, report.
 * Only in a stack deployed with `-c render=true` (docs/crawling.md, "Rendering").
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { CrawlConfigStore } from '../adapters/crawl-config-store.ts';
import { SsmCredentialStore } from '../adapters/credential-store.ts';
import { CrawlCancellation } from '../adapters/frontier-cancel.ts';
import { createFrontierStore } from '../adapters/frontier-store.ts';
import { functionOutputs } from '../adapters/function-outputs.ts';
import { lambdaBrowser } from '../adapters/lambda-browser.ts';
import { S3Blobs } from '../adapters/s3-blobs.ts';
import { SqsRedelivery } from '../adapters/sqs-redelivery.ts';
import { LruSet } from '../core/base/index.ts';
import { processRenderBatch } from '../core/batches/index.ts';
import { createAwsClients, type HandlerWiring } from '../shared/aws-clients.ts';
import { FUNCTION_ENV } from '../shared/contracts.ts';
import { type Env, loadEnv, RenderEnvSchema } from '../shared/env.ts';
import { CRAWLER_METRICS, METRIC_DIMENSIONS } from '../shared/metrics.ts';
import {
  failedItems,
  handlerTelemetry,
  type InvocationContext,
  invocationOf,
  receivedMessages,
} from '../shared/sqs-batch-handler.ts';

/** Links this container has seen (per crawl): bounded so a long-lived container stays small. */
const SEEN_CACHE_ENTRIES = 10_000;

export function createHandler(rawEnv: Env, wiring: HandlerWiring = {}) {
  const env = loadEnv(RenderEnvSchema, rawEnv, 'render function');
  const clients = createAwsClients(env, wiring);
  const { log, metrics } = handlerTelemetry('render', rawEnv.LOG_LEVEL);
  const redelivery = new SqsRedelivery(clients.sqs, env.RENDER_QUEUE_URL);
  const frontier = createFrontierStore(clients.dynamodb, env.FRONTIER_TABLE);
  const configs = new CrawlConfigStore(clients.dynamodb, env.FRONTIER_TABLE, env.DEFAULT_CRAWL_CONFIG);
  const blobs = new S3Blobs(clients.s3, env.PAGE_BUCKET);
  const bus = env[FUNCTION_ENV.eventBusName];
  const container = {
    configs,
    frontier,
    hosts: frontier,
    crawlStates: new CrawlCancellation(clients.dynamodb, env.FRONTIER_TABLE, {
      onError: (crawlId: string, error: unknown) =>
        log.warn('cancel check failed', { crawlId, error: String(error) }),
    }),
    // The local runtime's browser, or on Lambda @sparticuz/chromium's (the Chromium layer).
    renderer: wiring.renderer ?? lambdaBrowser(env.AWS_LAMBDA_RUNTIME_API !== undefined),
    credentials: new SsmCredentialStore(clients.ssm),
    pages: blobs,
    blobs,
    seen: new LruSet(SEEN_CACHE_ENTRIES),
    ...functionOutputs(clients, env, env.RENDER_DLQ_URL, configs, bus),
  };

  return async (event: SQSEvent, context?: InvocationContext): Promise<SQSBatchResponse> => {
    const messages = receivedMessages(event, metrics);
    const { invocationId, remainingMs } = invocationOf(context, DEFAULT_BUDGET_MS);
    const report = await processRenderBatch(messages, {
      ...container,
      invocationId,
      deadline: Date.now() + remainingMs,
    });
    for (const { crawlId, url, outcome, code, rendered } of report.results) {
      log.info('result', { crawlId, url, outcome, code, rendered });
      metrics.count(CRAWLER_METRICS.pages, 1, { [METRIC_DIMENSIONS.outcome]: outcome });
    }
    if (report.retries.length > 0) metrics.count(CRAWLER_METRICS.retries, report.retries.length);
    metrics.flush();
    for (const retry of report.retries)
      log.info('retry', { messageId: retry.id, code: retry.code, inSeconds: retry.delaySeconds });
    for (const { id, why } of report.dropped) log.warn('render message dropped', { messageId: id, why });
    return failedItems(
      event,
      report.retries.map((retry) => ({ id: retry.id, seconds: retry.delaySeconds })),
      redelivery,
      log,
    );
  };
}

/** Without a Lambda context (tests), the batch's time budget. */
const DEFAULT_BUDGET_MS = 60_000;

let lambdaHandler: ReturnType<typeof createHandler> | undefined;

/** The Lambda entry point: one handler instance per warm container, built on first use. */
export const handler = (event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse> => {
  lambdaHandler ??= createHandler(process.env);
  return lambdaHandler(event, context);
};
