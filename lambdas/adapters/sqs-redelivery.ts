/**
 * How a handler gives messages back to the queue it consumes, beyond the batch response: failed ones
 * made visible again after their back-off (not the queue's visibility timeout, 6x the function's),
 * and ones it had no time to start sent again as new messages (a failure report would spend a
 * receive toward the DLQ). One adapter for both functions.
 */
import { ChangeMessageVisibilityBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { sendMessagesInBatches } from './sqs-batch-sender.ts';

/** SQS takes at most 10 entries per batch call. */
const BATCH_ENTRIES = 10;

export interface DelayedMessage {
  receiptHandle: string;
  seconds: number;
}

export class SqsRedelivery {
  private readonly sqs: SQSClient;
  private readonly queueUrl: string;

  constructor(sqs: SQSClient, queueUrl: string) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
  }

  /** Hides each received message for its `seconds` (0: visible at once) before it is reported failed. */
  async delay(messages: readonly DelayedMessage[]): Promise<void> {
    for (let start = 0; start < messages.length; start += BATCH_ENTRIES) {
      const chunk = messages.slice(start, start + BATCH_ENTRIES);
      await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((message, index) => ({
            Id: String(index),
            ReceiptHandle: message.receiptHandle,
            VisibilityTimeout: message.seconds,
          })),
        }),
      );
    }
  }

  /** Sends these bodies again as new messages (their receive counts start over). */
  resend(bodies: readonly string[]): Promise<void> {
    return sendMessagesInBatches(
      this.sqs,
      this.queueUrl,
      bodies.map((body) => ({ body })),
    );
  }
}
