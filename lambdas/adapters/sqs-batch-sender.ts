/**
 * SendMessageBatch that never drops a message: it answers 200 with a per-entry `Failed` list,
 * and every failed entry is resent (with backoff) until it is accepted or we give up loudly.
 */
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { AWS_LIMITS, backoffPause, RETRY_BACKOFF, RetryableError } from '../core/base/index.ts';

export interface QueueMessage {
  body: string;
  delaySeconds?: number;
  /** MessageGroupId: on a standard queue it makes SQS fair queueing share throughput between groups. */
  groupId?: string | undefined;
  /** String message attributes (e.g. a DLQ entry's reason). */
  attributes?: Record<string, string>;
}

const MAX_ENTRIES = 10;
/** The queues' MaximumMessageSize, which SQS also applies to a whole batch request. */
export const MAX_MESSAGE_BYTES = AWS_LIMITS.sqsMaxMessageBytes;
const MAX_ROUNDS = 6;

export async function sendMessagesInBatches(
  sqs: SQSClient,
  queueUrl: string,
  messages: readonly QueueMessage[],
): Promise<void> {
  for (const chunk of chunkMessages(messages)) await sendChunk(sqs, queueUrl, chunk);
}

function* chunkMessages(messages: readonly QueueMessage[]): Generator<QueueMessage[]> {
  let chunk: QueueMessage[] = [];
  let bytes = 0;
  for (const message of messages) {
    const size = messageBytes(message);
    if (chunk.length === MAX_ENTRIES || (chunk.length > 0 && bytes + size > MAX_MESSAGE_BYTES)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(message);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}

/** What SQS counts against MaximumMessageSize: the body, and each attribute's name, type and value. */
export function messageBytes(message: Pick<QueueMessage, 'body' | 'attributes'>): number {
  let bytes = Buffer.byteLength(message.body);
  for (const [name, value] of Object.entries(message.attributes ?? {}))
    bytes += Buffer.byteLength(name) + STRING_TYPE.length + Buffer.byteLength(value);
  return bytes;
}

const STRING_TYPE = 'String';

async function sendChunk(sqs: SQSClient, queueUrl: string, chunk: QueueMessage[]): Promise<void> {
  let pending = new Map(chunk.map((message, index) => [String(index), message]));
  for (let round = 1; pending.size > 0; round++) {
    const response = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: [...pending].map(([id, message]) => ({
          Id: id,
          MessageBody: message.body,
          ...(message.delaySeconds ? { DelaySeconds: message.delaySeconds } : {}),
          ...(message.groupId ? { MessageGroupId: message.groupId } : {}),
          ...(message.attributes
            ? {
                MessageAttributes: Object.fromEntries(
                  Object.entries(message.attributes).map(([name, value]) => [
                    name,
                    { DataType: STRING_TYPE, StringValue: value },
                  ]),
                ),
              }
            : {}),
        })),
      }),
    );
    const failed = response.Failed ?? [];
    const senderFault = failed.find((entry) => entry.SenderFault);
    if (senderFault) {
      throw new Error(
        `SQS rejected a message to ${queueUrl}: ${senderFault.Code} ${senderFault.Message ?? ''}`,
      );
    }
    pending = new Map(failed.map((entry) => [entry.Id!, pending.get(entry.Id!)!]));
    if (pending.size > 0 && round >= MAX_ROUNDS) {
      throw new RetryableError(
        'sqs-send-failed',
        `SQS kept failing ${pending.size} of ${chunk.length} messages to ${queueUrl} after ${round} rounds`,
      );
    }
    if (pending.size > 0) await backoffPause(round, RETRY_BACKOFF.awsStep);
  }
}
