import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { QUEUE } from './limits.ts';

/** AWS guidance for Lambda consumers: with fewer receives, throttled or retried batches land in the DLQ. */
export const MIN_MAX_RECEIVE_COUNT = 5;
/** SQS caps visibility timeouts at 12 hours. */
const MAX_VISIBILITY_SECONDS = 43_200;

export interface QueueWithDlqProps {
  /** Construct id of the dead-letter queue, created next to this queue in the same scope. */
  readonly dlqId: string;
  /** Timeout of the Lambda function that consumes this queue. */
  readonly consumerTimeout: Duration;
  /** Batching window of that function's event source: messages are in flight during it too. */
  readonly consumerMaxBatchingWindow: Duration;
  readonly maxReceiveCount?: number;
}

/**
 * The visibility timeout a queue needs for a consumer: factor x (function timeout + batching window),
 * AWS guidance counting the window, in which a message is already in flight, as part of each try.
 * Lower than the timeout fails the deploy; lower than the factor duplicates work.
 */
export function visibilityTimeoutFor(consumerTimeout: Duration, maxBatchingWindow: Duration): Duration {
  return Duration.seconds(
    QUEUE.visibilityTimeoutFactor * (consumerTimeout.toSeconds() + maxBatchingWindow.toSeconds()),
  );
}

/**
 * A standard SQS queue with its dead-letter queue. Holds the invariants of every queue in the stack:
 * SQS-managed SSE, TLS-only access policy, redrive after >= 5 receives, and a visibility timeout
 * derived from its consumer's timeout, so it cannot be set too low by hand.
 */
export class QueueWithDlq extends sqs.Queue {
  readonly dlq: sqs.Queue;
  /** The computed visibility timeout (sqs.Queue does not expose it). */
  readonly visibilityTimeout: Duration;

  constructor(scope: Construct, id: string, props: QueueWithDlqProps) {
    const maxReceiveCount = props.maxReceiveCount ?? QUEUE.maxReceiveCount;
    if (!Number.isInteger(maxReceiveCount) || maxReceiveCount < MIN_MAX_RECEIVE_COUNT) {
      throw new Error(
        `${id}: maxReceiveCount must be an integer >= ${MIN_MAX_RECEIVE_COUNT}, got ${maxReceiveCount}`,
      );
    }
    const visibilityTimeout = visibilityTimeoutFor(props.consumerTimeout, props.consumerMaxBatchingWindow);
    if (visibilityTimeout.toSeconds() > MAX_VISIBILITY_SECONDS) {
      throw new Error(
        `${id}: visibility timeout ${visibilityTimeout.toSeconds()} s exceeds the SQS maximum of 12 h`,
      );
    }
    // The DLQ is a sibling (not a child) so its construct id is exactly props.dlqId in the stack.
    const dlq = new sqs.Queue(scope, props.dlqId, {
      ...common(),
      retentionPeriod: Duration.days(QUEUE.dlqRetentionDays),
    });
    super(scope, id, {
      ...common(),
      retentionPeriod: Duration.days(QUEUE.retentionDays),
      visibilityTimeout,
      deadLetterQueue: { queue: dlq, maxReceiveCount },
    });
    this.dlq = dlq;
    this.visibilityTimeout = visibilityTimeout;
  }
}

function common(): sqs.QueueProps {
  return {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    maxMessageSizeBytes: QUEUE.maxMessageSizeBytes,
  };
}
