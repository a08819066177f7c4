/**
 * What the SQS-triggered handlers do around their core, written once: their logs and metrics, the
 * batch as the core's messages, the invocation's time, and the batch response (failed messages are
 * first hidden for their back-off, so SQS redelivers them after it, not after the visibility timeout).
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createLogger, type LogFields, type Logger, logsAt } from './logger.ts';
import {
  CRAWLER_NAMESPACE,
  createMetrics,
  METRIC_DIMENSIONS,
  type Metrics,
  recordRedeliveredAges,
} from './metrics.ts';

/** Hides messages of the batch for a while (adapters/sqs-redelivery.ts: ChangeMessageVisibility). */
export interface Redelivery {
  delay(messages: ReadonlyArray<{ receiptHandle: string; seconds: number }>): Promise<void>;
}

/** What a handler reads of Lambda's context (tests and the local runtime pass less). */
export type InvocationContext = Pick<Context, 'awsRequestId'> &
  Partial<Pick<Context, 'getRemainingTimeInMillis'>>;

export interface Telemetry {
  log: Logger;
  metrics: Metrics;
}

/** The function's logger and metrics, both at `LOG_LEVEL`. */
export function handlerTelemetry(
  fn: 'fetch' | 'aggregate' | 'render',
  logLevel: string | undefined,
): Telemetry {
  return {
    log: createLogger(fn, logLevel),
    // EMF lines are log lines: a quiet local run (LOG_LEVEL=warn) keeps them out of the CLI's output.
    metrics: createMetrics(
      CRAWLER_NAMESPACE,
      { [METRIC_DIMENSIONS.function]: fn },
      logsAt(logLevel, 'info') ? undefined : () => {},
    ),
  };
}

export interface ReceivedMessage {
  id: string;
  body: string;
  receiveCount: number;
}

/**
 * The batch as the core takes it. The ages of redelivered messages are written on the way, before
 * any work: an invocation that then times out or runs out of memory writes nothing more, and those
 * are the ones the alarm on messages received three times or more is for.
 */
export function receivedMessages(event: SQSEvent, metrics: Metrics): ReceivedMessage[] {
  recordRedeliveredAges(metrics, event.Records, Date.now());
  metrics.flush();
  return event.Records.map((record) => ({
    id: record.messageId,
    body: record.body,
    receiveCount: Number(record.attributes.ApproximateReceiveCount) || 1,
  }));
}

/** This invocation's id and the time it has left (`fallbackMs` without a Lambda context). */
export function invocationOf(
  context: InvocationContext | undefined,
  fallbackMs: number,
): { invocationId: string; remainingMs: number } {
  return {
    invocationId: context?.awsRequestId ?? crypto.randomUUID(),
    remainingMs: context?.getRemainingTimeInMillis?.() ?? fallbackMs,
  };
}

/**
 * Reports `failed` as batch item failures after hiding each for its `seconds`. If that fails they
 * come back after the queue's visibility timeout instead: later, not lost.
 */
export async function failedItems(
  event: SQSEvent,
  failed: ReadonlyArray<{ id: string; seconds: number }>,
  redelivery: Redelivery,
  log: Logger,
): Promise<SQSBatchResponse> {
  const receipts = new Map(event.Records.map((record) => [record.messageId, record.receiptHandle]));
  await redelivery
    .delay(
      failed.flatMap(({ id, seconds }) => {
        const receiptHandle = receipts.get(id);
        return receiptHandle === undefined ? [] : [{ receiptHandle, seconds }];
      }),
    )
    .catch((error: unknown) =>
      log.warn('could not change the visibility of failed messages', { error: String(error) }),
    );
  return { batchItemFailures: failed.map(({ id }) => ({ itemIdentifier: id })) };
}

/** One log line per item of a report's list. */
export function logEach<T extends LogFields>(
  log: Logger,
  level: 'debug' | 'info' | 'warn' | 'error',
  message: string,
  items: readonly T[],
): void {
  for (const item of items) log[level](message, item);
}
